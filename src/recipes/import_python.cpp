#include "envkit/recipes/import_python.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "envkit/core/text.hpp"

namespace envkit::recipes {

namespace {

using nlohmann::json;
using specs::Platform;
using specs::Version;

constexpr std::uint64_t kOldestMinor = 8;
constexpr std::uint64_t kNewestMinor = 14;

// The fields of one download-metadata.json entry that decide whether it is kept.
struct Download {
  std::string name;  // cpython, pypy, graalpy
  std::string os;
  std::string arch_family;
  std::optional<std::string> arch_variant;  // x86_64 v2/v3/v4; null for the baseline
  std::string libc;
  std::uint64_t major = 0;
  std::uint64_t minor = 0;
  std::uint64_t patch = 0;
  std::string prerelease;
  std::string url;
  std::optional<std::string> sha256;   // null in a few old entries
  std::optional<std::string> variant;  // debug, freethreaded, freethreaded+debug; null otherwise
};

std::optional<std::string> optional_string(const json& value) {
  if (value.is_null()) return std::nullopt;
  return value.get<std::string>();
}

Result<Download> read_download(const json& entry, std::string_view key, std::string_view file) {
  try {
    const auto& arch = entry.at("arch");
    return Download{.name = entry.at("name").get<std::string>(),
                    .os = entry.at("os").get<std::string>(),
                    .arch_family = arch.at("family").get<std::string>(),
                    .arch_variant = optional_string(arch.at("variant")),
                    .libc = entry.at("libc").get<std::string>(),
                    .major = entry.at("major").get<std::uint64_t>(),
                    .minor = entry.at("minor").get<std::uint64_t>(),
                    .patch = entry.at("patch").get<std::uint64_t>(),
                    .prerelease = entry.at("prerelease").get<std::string>(),
                    .url = entry.at("url").get<std::string>(),
                    .sha256 = optional_string(entry.at("sha256")),
                    .variant = optional_string(entry.at("variant"))};
  } catch (const json::exception& e) {
    return Error::input(fmt::format("{}: entry {} is malformed", file, text::quoted(key)))
        .because(e.what());
  }
}

// The envkit platform of a download; nullopt for platforms envkit does not serve
// (macOS, musl, armv7, the x86_64 v2/v3/v4 builds, ...).
std::optional<Platform> envkit_platform(const Download& d) {
  if (d.arch_variant) return std::nullopt;
  if (d.os == "linux" && d.libc == "gnu") {
    if (d.arch_family == "x86_64") return Platform::linux_x86_64;
    if (d.arch_family == "aarch64") return Platform::linux_aarch64;
  }
  // Windows builds are MSVC builds; the metadata writes libc "none" for them.
  if (d.os == "windows" && d.arch_family == "x86_64") return Platform::windows_x86_64;
  return std::nullopt;
}

std::string_view archive_name(std::string_view url) {
  return url.substr(url.rfind('/') + 1);
}

std::optional<std::string> archive_format(std::string_view url) {
  for (const auto* format : {"tar.gz", "tar.zst"}) {
    if (url.ends_with(fmt::format(".{}", format))) return format;
  }
  return std::nullopt;
}

// install_only archives hold `python/` ready to use; "full" archives (the
// only ones for 3.8.2 … 3.10.0 on some platforms) hold a build tree with the
// installation under `python/install/`. uv's metadata lists no other kind.
bool is_install_only(std::string_view url) {
  const auto name = archive_name(url);
  return name.find("-install_only.") != std::string_view::npos ||
         name.find("-install_only_stripped.") != std::string_view::npos;
}

bool is_stripped(std::string_view url) {
  return archive_name(url).find("-install_only_stripped.") != std::string_view::npos;
}

// Which archive of a version and platform is kept, the highest first: a
// stripped install_only archive, a plain one, a full one.
int preference(std::string_view url) {
  if (is_stripped(url)) return 2;
  return is_install_only(url) ? 1 : 0;
}

bool is_wanted(const Download& d) {
  return d.name == "cpython" && !d.variant && d.prerelease.empty() && d.major == 3 &&
         d.minor >= kOldestMinor && d.minor <= kNewestMinor && d.sha256 &&
         envkit_platform(d).has_value();
}

Result<Artifact> archive_artifact(const Download& d, std::string_view key, std::string_view file) {
  auto format = archive_format(d.url);
  if (!format) {
    return Error::input(fmt::format("{}: entry {}: unknown archive format in {}", file,
                                    text::quoted(key), text::quoted(d.url)));
  }
  return Artifact{
      .platform = *envkit_platform(d),
      .component = "python",
      .kind = ArtifactKind::archive,
      .url = d.url,
      .sha256 = *d.sha256,
      .size = std::nullopt,  // the metadata gives no sizes
      .format = *format,
      .layout = is_install_only(d.url) ? Layout::python_standalone : Layout::python_standalone_full,
      .wheel_root = {}};
}

RecipeVersion& version_entry(Recipe& recipe, const Download& d) {
  const auto version = Version::from_release({d.major, d.minor, d.patch});
  auto it = std::find_if(recipe.versions.begin(), recipe.versions.end(),
                         [&](const RecipeVersion& v) { return v.version == version; });
  if (it != recipe.versions.end()) return *it;
  return recipe.versions.emplace_back(RecipeVersion{.version = version, .builds = {Build{}}});
}

// One archive per platform, the preferred one (stripped, plain, full).
void add_artifact(Build& build, Artifact artifact) {
  auto it = std::find_if(build.artifacts.begin(), build.artifacts.end(),
                         [&](const Artifact& a) { return a.platform == artifact.platform; });
  if (it == build.artifacts.end()) {
    build.platforms.push_back(artifact.platform);
    build.artifacts.push_back(std::move(artifact));
  } else if (preference(artifact.url) > preference(it->url)) {
    *it = std::move(artifact);
  }
}

}  // namespace

Result<Recipe> import_python_standalone(std::string_view json_text, std::string_view file) {
  const auto document = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (document.is_discarded() || !document.is_object()) {
    return Error::input(fmt::format("{}: not a JSON object of downloads", file));
  }
  Recipe recipe{
      .name = "python", .sources = {std::string(file)}, .default_components = {}, .versions = {}};
  for (const auto& [key, entry] : document.items()) {
    auto download = read_download(entry, key, file);
    if (!download) return std::move(download).error();
    if (!is_wanted(*download)) continue;
    auto artifact = archive_artifact(*download, key, file);
    if (!artifact) return std::move(artifact).error();
    add_artifact(version_entry(recipe, *download).builds.front(), std::move(*artifact));
  }
  canonicalize(recipe);
  return recipe;
}

}  // namespace envkit::recipes
