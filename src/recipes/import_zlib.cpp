#include "envkit/recipes/import_zlib.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <string>

#include "envkit/core/csv.hpp"
#include "envkit/core/sha256.hpp"
#include "envkit/core/text.hpp"

namespace envkit::recipes {

namespace {

using specs::Platform;
using specs::Version;

// The releases the database offers; the older tarballs the table lists are left out.
const Version kOldest = Version::from_release({1, 2, 11});
const Version kNewest = Version::from_release({1, 3, 1});

constexpr std::array kPlatforms = {Platform::linux_x86_64, Platform::linux_aarch64};

Result<Build> source_build(const csv::Table& table, const csv::Row& row) {
  const auto& url = table.at(row, "url");
  const auto& sha256 = table.at(row, "sha256");
  if (!url.ends_with(".tar.gz")) {
    return Error::input(fmt::format("{} is not a .tar.gz URL", text::quoted(url)));
  }
  if (!core::is_sha256_hex(sha256)) {
    return Error::input(fmt::format("{} is not a lowercase hex sha256", text::quoted(sha256)));
  }
  Build build;
  for (const auto platform : kPlatforms) {
    build.platforms.push_back(platform);
    build.artifacts.push_back(Artifact{.platform = platform,
                                       .component = "zlib",
                                       .kind = ArtifactKind::source,
                                       .url = url,
                                       .sha256 = sha256,
                                       .size = std::nullopt,
                                       .format = "tar.gz",
                                       .layout = Layout::source_tree,
                                       .wheel_root = {},
                                       // zlib's own ./configure, not its CMakeLists.txt: the
                                       // README's way (configure; make; make install), it needs
                                       // only build-essential (no cmake), and every release
                                       // 1.2.11 ... 1.3.1 gets libz.so.1 from it the same way
                                       // (the CMake build renames zconf.h in the source tree).
                                       .build_system = BuildSystem::configure});
  }
  return build;
}

}  // namespace

Result<Recipe> import_zlib(std::string_view csv_text, std::string_view file) {
  auto table = csv::Table::parse(csv_text, file, {"version", "url", "sha256"});
  if (!table) return std::move(table).error();
  Recipe recipe{
      .name = "zlib", .sources = {std::string(file)}, .default_components = {}, .versions = {}};
  for (const auto& row : table->rows()) {
    auto version = Version::parse(table->at(row, "version"));
    if (!version) {
      return table->row_error(row, "cannot read the zlib version")
          .because(version.error().message());
    }
    if (*version < kOldest || *version > kNewest) continue;
    if (recipe.find(*version) != nullptr) {
      return table->row_error(row, "zlib " + version->original() + " is listed twice");
    }
    auto build = source_build(*table, row);
    if (!build) {
      return table->row_error(row, "cannot read the zlib row").because(build.error().message());
    }
    recipe.versions.push_back(RecipeVersion{.version = *version, .builds = {std::move(*build)}});
  }
  canonicalize(recipe);
  return recipe;
}

}  // namespace envkit::recipes
