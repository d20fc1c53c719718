#include "envkit/recipes/import_debian_python.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <optional>
#include <regex>

#include "envkit/core/sha256.hpp"
#include "envkit/core/text.hpp"
#include "envkit/core/url.hpp"

namespace envkit::recipes {

namespace {

// One stanza of a Sources index, as far as this importer reads it.
struct SourceStanza {
  std::string package;
  std::string directory;
  // Checksums-Sha256: (sha256, size, file, line of the entry).
  std::vector<std::tuple<std::string, std::string, std::string, int>> files;
  int first_line = 0;
};

std::string_view without_slash(std::string_view url) {
  while (url.ends_with('/'))
    url.remove_suffix(1);
  return url;
}

bool is_python_package(std::string_view name) {
  static const std::regex pattern(R"(python3\.\d+)");
  return std::regex_match(name.begin(), name.end(), pattern);
}

// `python3.11_3.11.2.orig.tar.xz` -> 3.11.2; nullopt for any other file of the package
// (`.dsc`, `.debian.tar.xz`, `.asc`) and for a pre-release or repack (`3.14.0~rc1`,
// `3.9.2+dfsg`): those are not python.org's files.
std::optional<std::string> upstream_release(std::string_view package, std::string_view file) {
  static const std::regex pattern(R"(([^_]+)_(\d+\.\d+\.\d+)\.orig\.tar\.(xz|gz|bz2))");
  std::match_results<std::string_view::const_iterator> match;
  if (!std::regex_match(file.begin(), file.end(), match, pattern)) return std::nullopt;
  if (match[1].str() != package) return std::nullopt;
  return match[2].str();
}

Result<void> read_stanza(const SourceStanza& stanza, std::string_view file,
                         std::string_view archive, std::vector<DebianTarball>& out) {
  if (!is_python_package(stanza.package)) return {};
  for (const auto& [sha256, size_text, name, line] : stanza.files) {
    const auto release = upstream_release(stanza.package, name);
    if (!release) continue;
    std::uint64_t size = 0;
    const auto [end, error] =
        std::from_chars(size_text.data(), size_text.data() + size_text.size(), size);
    if (!core::is_sha256_hex(sha256) || error != std::errc{} ||
        end != size_text.data() + size_text.size()) {
      return Error::input(fmt::format("the Checksums-Sha256 line of {} is not `<sha256> <size> "
                                      "<file>`",
                                      text::quoted(name)))
          .at({std::string(file), line, 1});
    }
    if (stanza.directory.empty()) {
      return Error::input(
                 fmt::format("source package {} has no `Directory:`", text::quoted(stanza.package)))
          .at({std::string(file), stanza.first_line, 1});
    }
    DebianTarball tarball{
        .package = stanza.package,
        .version = *release,
        .file = name,
        .url = fmt::format("{}/{}/{}", without_slash(archive), stanza.directory, name),
        .sha256 = sha256,
        .size = size};
    const bool known = std::any_of(out.begin(), out.end(), [&](const DebianTarball& seen) {
      return seen.url == tarball.url && seen.sha256 == tarball.sha256;
    });
    if (!known) out.push_back(std::move(tarball));
  }
  return {};
}

}  // namespace

Result<std::vector<DebianTarball>> debian_python_tarballs(std::string_view sources,
                                                          std::string_view file,
                                                          std::string_view archive) {
  std::vector<DebianTarball> out;
  SourceStanza stanza;
  std::string field;  // the field continuation lines belong to
  int number = 0;
  const auto finish = [&]() -> Result<void> {
    auto read = read_stanza(stanza, file, archive, out);
    stanza = SourceStanza{};
    field.clear();
    return read;
  };
  for (auto line : text::split(sources, '\n')) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (text::trim(line).empty()) {
      if (auto done = finish(); !done) return done.error();
      continue;
    }
    if (stanza.first_line == 0) stanza.first_line = number;
    if (line.front() == ' ' || line.front() == '\t') {
      if (field != "Checksums-Sha256") continue;
      const auto parts = text::split(text::trim(line), ' ');
      std::vector<std::string_view> words;
      for (const auto part : parts) {
        if (!part.empty()) words.push_back(part);
      }
      if (words.size() != 3) {
        if (!is_python_package(stanza.package)) continue;
        return Error::input("a Checksums-Sha256 line is not `<sha256> <size> <file>`")
            .at({std::string(file), number, 1});
      }
      stanza.files.emplace_back(std::string(words[0]), std::string(words[1]), std::string(words[2]),
                                number);
      continue;
    }
    const auto colon = line.find(':');
    if (colon == std::string_view::npos) {
      return Error::input(fmt::format("expected `Field: value`, found {}",
                                      text::quoted(std::string(line.substr(0, 60)))))
          .at({std::string(file), number, 1});
    }
    field = std::string(line.substr(0, colon));
    const auto value = std::string(text::trim(line.substr(colon + 1)));
    if (field == "Package") stanza.package = value;
    if (field == "Directory") stanza.directory = value;
  }
  if (auto done = finish(); !done) return done.error();
  std::sort(out.begin(), out.end(), [](const DebianTarball& a, const DebianTarball& b) {
    return std::tie(a.package, a.version, a.file) < std::tie(b.package, b.version, b.file);
  });
  return out;
}

DebianImport import_debian_python(const Recipe& sources, std::span<const DebianTarball> tarballs,
                                  std::string_view provenance) {
  DebianImport out;
  out.recipe.name = "python";
  out.recipe.sources.emplace_back(provenance);
  for (const auto& tarball : tarballs) {
    const auto version = specs::Version::parse(tarball.version);
    const auto* known = version ? sources.find(*version) : nullptr;
    const Artifact* recorded = nullptr;
    std::string build_id;
    if (known != nullptr) {
      for (const auto& build : known->builds) {
        for (const auto& artifact : build.artifacts) {
          if (artifact.kind == ArtifactKind::source && artifact.component == "python") {
            recorded = &artifact;
            build_id = build.id;
          }
        }
      }
    }
    if (recorded == nullptr) {
      out.left_out.push_back(
          fmt::format("{}: the database records no python.org tarball of CPython {}", tarball.url,
                      tarball.version));
      continue;
    }
    if (recorded->sha256 != tarball.sha256) {
      out.left_out.push_back(
          fmt::format("{}: not python.org's {} (sha256 {}, the recorded file's is {})", tarball.url,
                      text::quoted(url::file_name(recorded->url)), tarball.sha256.substr(0, 12),
                      recorded->sha256.substr(0, 12)));
      continue;
    }
    auto* version_entry = [&]() -> RecipeVersion* {
      for (auto& entry : out.recipe.versions) {
        if (entry.version.original() == known->version.original()) return &entry;
      }
      out.recipe.versions.push_back({.version = known->version, .builds = {}});
      return &out.recipe.versions.back();
    }();
    auto build = std::find_if(version_entry->builds.begin(), version_entry->builds.end(),
                              [&](const Build& b) { return b.id == build_id; });
    if (build == version_entry->builds.end()) {
      version_entry->builds.push_back(Build{.id = build_id});
      build = version_entry->builds.end() - 1;
    }
    if (std::find(build->platforms.begin(), build->platforms.end(), recorded->platform) ==
        build->platforms.end())
      build->platforms.push_back(recorded->platform);
    Artifact at_debian = *recorded;
    at_debian.url = tarball.url;
    at_debian.also_at.clear();
    at_debian.size = tarball.size;
    const bool listed = std::any_of(build->artifacts.begin(), build->artifacts.end(),
                                    [&](const Artifact& a) { return a.url == at_debian.url; });
    if (!listed) build->artifacts.push_back(std::move(at_debian));
    out.matched.push_back(tarball);
  }
  canonicalize(out.recipe);
  return out;
}

}  // namespace envkit::recipes
