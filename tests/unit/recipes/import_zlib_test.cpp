#include "envkit/recipes/import_zlib.hpp"

#include <catch2/catch.hpp>
#include <filesystem>

#include "envkit/core/csv.hpp"
#include "envkit/sys/fs.hpp"
#include "recipes_test_support.hpp"
#include "support/envkit_runner.hpp"
#include "support/skip.hpp"

namespace fs = std::filesystem;
using envkit::recipes::ArtifactKind;
using envkit::recipes::BuildSystem;
using envkit::recipes::import_zlib;
using envkit::recipes::Layout;
using envkit::specs::Platform;
using envkit::specs::Version;

namespace {

std::string zlib_fixture(std::string_view name) {
  return envkit::test::recipes_fixture("other", name);
}

}  // namespace

TEST_CASE("zlib: 1.2.11 to 1.3.1 source tarballs pinned by sha256", "[other][zlib]") {
  auto recipe = import_zlib(zlib_fixture("zlib_releases.csv"), "zlib.csv");
  INFO((recipe.ok() ? "" : recipe.error().to_string()));
  REQUIRE(recipe);
  CHECK(recipe->name == "zlib");
  REQUIRE(recipe->versions.size() == 3);  // 1.2.8 is older than the range
  CHECK(recipe->versions[0].version.original() == "1.2.11");
  CHECK(recipe->versions[2].version.original() == "1.3.1");

  const auto& build = recipe->find(Version::parse("1.3.1").value())->builds.at(0);
  CHECK(build.id.empty());
  CHECK(build.platforms == std::vector<Platform>{Platform::linux_x86_64, Platform::linux_aarch64});
  REQUIRE(build.artifacts.size() == 2);
  for (const auto& artifact : build.artifacts) {
    CHECK(artifact.url == "http://zlib.net/fossils/zlib-1.3.1.tar.gz");  // http as upstream
    CHECK(artifact.sha256 == std::string(64, 'a'));
    CHECK(artifact.kind == ArtifactKind::source);
    CHECK(artifact.layout == Layout::source_tree);
    CHECK(artifact.build_system == BuildSystem::configure);  // zlib's ./configure
    CHECK(artifact.format == "tar.gz");
    CHECK(artifact.component == "zlib");
  }
}

TEST_CASE("zlib: a bad sha256 is an error at file:line", "[other][zlib]") {
  auto recipe = import_zlib(zlib_fixture("zlib_bad_sha256.csv"), "zlib.csv");
  REQUIRE_FALSE(recipe);
  CHECK(recipe.error().headline() == "zlib.csv:3: cannot read the zlib row");
  CHECK(recipe.error().causes() ==
        std::vector<std::string>{"`ABCDEF` is not a lowercase hex sha256"});

  auto no_column =
      import_zlib("version,url\n1.3.1,http://zlib.net/fossils/zlib-1.3.1.tar.gz\n", "z.csv");
  REQUIRE_FALSE(no_column);
  CHECK(no_column.error().headline() == "z.csv:1: missing column `sha256`");
}

TEST_CASE("zlib: the real table gives 1.3.1 with its sha256", "[other][upstream]") {
  const auto file = envkit::test::test_data_dir() / ".." / ".." / ".." / "shared" / "upstream" /
                    "zlib" / "zlib_releases.csv";
  if (!fs::exists(file)) {
    envkit::test::skip_test(envkit::test::SkipKind::expected,
                            "no upstream data at " + file.string());
    return;
  }
  const auto text = envkit::sys::read_file(file).value();
  auto recipe = import_zlib(text, file.string());
  REQUIRE(recipe);
  CHECK(recipe->versions.size() == 5);
  // The sha256 the recipe pins is the one in the table's 1.3.1 row.
  const auto table = envkit::csv::Table::parse(text, file.string()).value();
  std::string table_sha256;
  for (const auto& row : table.rows()) {
    if (table.at(row, "version") == "1.3.1") table_sha256 = table.at(row, "sha256");
  }
  const auto& artifact =
      recipe->find(Version::parse("1.3.1").value())->builds.at(0).artifacts.at(0);
  CHECK(artifact.sha256 == table_sha256);
  CHECK(artifact.sha256 == "9a93b2b7dfdac77ceba5a558a580e74667dd6fede4585b91eefb60f03b72df23");
}
