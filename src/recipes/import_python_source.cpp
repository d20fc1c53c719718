#include "envkit/recipes/import_python_source.hpp"

#include <fmt/format.h>

#include <optional>
#include <string>
#include <vector>

#include "envkit/core/sha256.hpp"
#include "envkit/core/text.hpp"

namespace envkit::recipes {

namespace {

using specs::Platform;
using specs::Version;

constexpr std::uint64_t kOldestSourceMinor = 5;
constexpr std::uint64_t kNewestSourceMinor = 14;

// One `install_package "Python-X.Y.Z" "<url>#<sha256>"` line of a definition.
struct TarballLine {
  std::string package;  // Python-3.7.9
  std::string url;
  std::string sha256;
  int line = 0;
  int column = 0;  // of the URL, for errors
};

// The release a definition's file name names, when it is a final CPython 3.x:
// `3.7.9` yes; `3.7-dev`, `3.13.0t`, `3.15.0b4`, `3.6.15-debug` no.
std::optional<Version> final_release(std::string_view name) {
  const auto parts = text::split(name, '.');
  if (parts.size() != 3) return std::nullopt;
  for (const auto part : parts) {
    if (part.empty() || part.find_first_not_of("0123456789") != std::string_view::npos) {
      return std::nullopt;
    }
  }
  auto version = Version::parse(name);
  if (!version) return std::nullopt;
  const auto& release = version->release();
  if (release.at(0) != 3 || release.at(1) < kOldestSourceMinor ||
      release.at(1) > kNewestSourceMinor) {
    return std::nullopt;
  }
  return *version;
}

// The quoted word starting at `from` (at or after spaces) and where its text starts.
std::optional<std::pair<std::string_view, std::size_t>> quoted_word(std::string_view line,
                                                                    std::size_t from) {
  const auto open = line.find_first_not_of(" \t", from);
  if (open == std::string_view::npos || line[open] != '"') return std::nullopt;
  const auto close = line.find('"', open + 1);
  if (close == std::string_view::npos) return std::nullopt;
  return std::pair{line.substr(open + 1, close - open - 1), open + 1};
}

// The Python tarball lines of a definition (other packages, OpenSSL and
// readline for macOS, are not ours).
Result<std::vector<TarballLine>> python_lines(const SourceText& definition) {
  constexpr std::string_view kCommand = "install_package";
  std::vector<TarballLine> found;
  int number = 0;
  for (const auto raw : text::split(definition.text, '\n')) {
    ++number;
    const auto indent = raw.find_first_not_of(" \t");
    if (indent == std::string_view::npos || !raw.substr(indent).starts_with(kCommand)) continue;
    const auto package = quoted_word(raw, indent + kCommand.size());
    if (!package || !package->first.starts_with("Python-")) continue;
    const auto source = quoted_word(raw, package->second + package->first.size() + 1);
    const auto at = [&](std::size_t column) -> SourceLocation {
      return {std::string(definition.file), number, static_cast<int>(column) + 1};
    };
    if (!source) {
      return std::move(Error::input(fmt::format("{} has no quoted \"<url>#<sha256>\" after it",
                                                text::quoted(package->first)))
                           .at(at(package->second)));
    }
    const auto hash = source->first.rfind('#');
    if (hash == std::string_view::npos) {
      // pyenv's `$src` lines (3.4-dev style) name no tarball.
      continue;
    }
    TarballLine line{.package = std::string(package->first),
                     .url = std::string(source->first.substr(0, hash)),
                     .sha256 = std::string(source->first.substr(hash + 1)),
                     .line = number,
                     .column = static_cast<int>(source->second) + 1};
    if (!core::is_sha256_hex(line.sha256)) {
      return std::move(
          Error::input(fmt::format("{} is not a lowercase hex sha256", text::quoted(line.sha256)))
              .at(at(source->second + hash + 1)));
    }
    found.push_back(std::move(line));
  }
  return found;
}

std::optional<std::string> tarball_format(std::string_view url) {
  if (url.ends_with(".tar.xz")) return "tar.xz";
  if (url.ends_with(".tgz")) return "tgz";
  return std::nullopt;
}

// The definition's tarball: its .tar.xz, else its .tgz (pyenv picks by
// whether tar reads xz; every machine envkit serves does).
Result<std::optional<TarballLine>> chosen_tarball(const SourceText& definition,
                                                  const Version& version) {
  auto lines = python_lines(definition);
  if (!lines) return std::move(lines).error();
  const auto expected = "Python-" + version.original();
  std::optional<TarballLine> chosen;
  for (auto& line : *lines) {
    if (line.package != expected) {
      return std::move(Error::input(fmt::format("the definition of {} installs {}",
                                                version.original(), text::quoted(line.package)))
                           .at({std::string(definition.file), line.line, line.column}));
    }
    const auto format = tarball_format(line.url);
    if (!format) continue;
    if (!chosen || (*format == "tar.xz" && !chosen->url.ends_with(".tar.xz"))) {
      chosen = std::move(line);
    }
  }
  return chosen;
}

std::string_view definition_name(std::string_view path) {
  const auto slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

}  // namespace

Result<Recipe> import_python_source(std::span<const SourceText> definitions,
                                    std::string_view provenance) {
  Recipe recipe{.name = "python",
                .sources = {std::string(provenance)},
                .default_components = {},
                .versions = {}};
  for (const auto& definition : definitions) {
    const auto version = final_release(definition_name(definition.file));
    if (!version) continue;
    auto tarball = chosen_tarball(definition, *version);
    if (!tarball) return std::move(tarball).error();
    if (!*tarball) continue;
    const auto& line = **tarball;
    Build build;
    build.platforms = {Platform::linux_x86_64};
    build.artifacts.push_back(Artifact{.platform = Platform::linux_x86_64,
                                       .component = "python",
                                       .kind = ArtifactKind::source,
                                       .url = line.url,
                                       .sha256 = line.sha256,
                                       .size = std::nullopt,
                                       .format = *tarball_format(line.url),
                                       .layout = Layout::source_tree,
                                       .wheel_root = {},
                                       .build_system = BuildSystem::cpython});
    recipe.versions.push_back(RecipeVersion{.version = *version, .builds = {std::move(build)}});
  }
  canonicalize(recipe);
  return recipe;
}

}  // namespace envkit::recipes
