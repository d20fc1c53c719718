// Debian's Sources index -> the python.org tarballs Debian carries -> `also-at` URLs of the
// recorded artifacts, and how the database merges them (docs/recipes.md, "The Debian overlay").
#include "envkit/recipes/import_debian_python.hpp"

#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "envkit/recipes/database.hpp"
#include "envkit/recipes/recipe_io.hpp"
#include "envkit/sys/fs.hpp"
#include "support/envkit_runner.hpp"
#include "support/temp_dir.hpp"

namespace envkit::recipes::debian_python_test {
namespace {

using Catch::Matchers::Contains;

constexpr std::string_view kArchive = "https://deb.debian.org/debian/";
// bullseye's python3.9_3.9.2.orig.tar.xz, as its Sources lists it; python.org's
// Python-3.9.2.tar.xz has the same sha256 (pyenv's definition of 3.9.2).
constexpr std::string_view kPython392 =
    "3c2034c54f811448f516668dce09d24008a0716c3a794dd8639b5388cbde247d";
// python.org's Python-3.11.2.tar.xz (pyenv's definition of 3.11.2): Debian's 3.11.2 is the .tgz.
constexpr std::string_view kPython3112Xz =
    "29e4b8f5f1658542a8c13e2dd277358c9c48f2b2f7318652ef1675e402b9d2af";

std::string excerpt() {
  return sys::read_file(test::test_data_dir() / "debian" / "Sources-python-excerpt").value();
}

// Recipe `python` as the pyenv overlay records 3.9.2 and 3.11.2: python.org's tarballs.
Recipe recorded() {
  Recipe recipe{.name = "python"};
  for (const auto& [version, file, sha256] :
       {std::tuple{"3.9.2", "Python-3.9.2.tar.xz", kPython392},
        std::tuple{"3.11.2", "Python-3.11.2.tar.xz", kPython3112Xz}}) {
    recipe.versions.push_back(
        {.version = specs::Version::parse(version).value(),
         .builds = {{.platforms = {specs::Platform::linux_x86_64},
                     .artifacts = {{.platform = specs::Platform::linux_x86_64,
                                    .component = "python",
                                    .kind = ArtifactKind::source,
                                    .url = fmt::format("https://www.python.org/ftp/python/{}/{}",
                                                       version, file),
                                    .sha256 = std::string(sha256),
                                    .format = "tar.xz",
                                    .layout = Layout::source_tree,
                                    .build_system = BuildSystem::cpython}}}}});
  }
  return recipe;
}

}  // namespace

TEST_CASE("a Sources index gives the orig tarballs of its python3.X packages, with their URLs",
          "[recipes][debian]") {
  const auto tarballs = debian_python_tarballs(excerpt(), "Sources", kArchive);
  REQUIRE(tarballs.ok());
  REQUIRE(tarballs->size() == 2);  // python3-defaults is not a CPython release
  const auto& tarball = tarballs->at(1);
  CHECK(tarball.package == "python3.9");
  CHECK(tarball.version == "3.9.2");
  CHECK(tarball.file == "python3.9_3.9.2.orig.tar.xz");
  CHECK(tarball.url ==
        "https://deb.debian.org/debian/pool/main/p/python3.9/python3.9_3.9.2.orig.tar.xz");
  CHECK(tarball.sha256 == kPython392);
  CHECK(tarball.size == 18889164);
  CHECK(tarballs->at(0).file == "python3.11_3.11.2.orig.tar.gz");
}

TEST_CASE("a malformed checksum line of a python3.X package names the index and the line",
          "[recipes][debian]") {
  const std::string text =
      "Package: python3.12\nDirectory: pool/main/p/python3.12\nChecksums-Sha256:\n"
      " nothex 123 python3.12_3.12.1.orig.tar.xz\n";
  const auto tarballs = debian_python_tarballs(text, "Sources", kArchive);
  REQUIRE_FALSE(tarballs.ok());
  CHECK(tarballs.error().exit_code() == 2);
  CHECK_THAT(tarballs.error().to_string(), Contains("Sources:4:1"));
  CHECK_THAT(tarballs.error().to_string(), Contains("python3.12_3.12.1.orig.tar.xz"));
}

TEST_CASE("only a tarball whose sha256 is the recorded python.org file's is matched",
          "[recipes][debian]") {
  const auto tarballs = debian_python_tarballs(excerpt(), "Sources", kArchive).value();
  const auto imported = import_debian_python(recorded(), tarballs, "deb.debian.org (test)");
  REQUIRE(imported.matched.size() == 1);
  CHECK(imported.matched.front().version == "3.9.2");
  REQUIRE(imported.recipe.versions.size() == 1);
  const auto& artifact = imported.recipe.versions.front().builds.front().artifacts.front();
  CHECK(artifact.url ==
        "https://deb.debian.org/debian/pool/main/p/python3.9/python3.9_3.9.2.orig.tar.xz");
  CHECK(artifact.sha256 == kPython392);
  CHECK(artifact.build_system == BuildSystem::cpython);
  // 3.11.2's is the .tgz: another file than the recorded .tar.xz, left out and said so.
  REQUIRE(imported.left_out.size() == 1);
  CHECK_THAT(imported.left_out.front(), Contains("python3.11_3.11.2.orig.tar.gz: not "
                                                 "python.org's `Python-3.11.2.tar.xz`"));
}

TEST_CASE("the Debian overlay's file of a recorded tarball becomes that artifact's also-at",
          "[recipes][debian]") {
  test::TempDir dir;
  const auto db_dir = dir.path() / "recipes";
  auto facts = recorded();
  // The database: python.yaml's facts, the pyenv overlay's tarballs, the Debian overlay.
  Recipe plain = facts;
  for (auto& version : plain.versions) {
    for (auto& build : version.builds)
      build.artifacts.clear();
  }
  dir.write("recipes/python.yaml", write_facts(plain));
  REQUIRE(write_source_overlay(db_dir, facts).ok());
  const auto tarballs = debian_python_tarballs(excerpt(), "Sources", kArchive).value();
  REQUIRE(write_debian_overlay(db_dir, import_debian_python(facts, tarballs, "test").recipe).ok());

  auto db = Database::open(db_dir);
  REQUIRE(db.ok());
  const auto recipe = db->load_version("python", specs::Version::parse("3.9.2").value());
  REQUIRE(recipe.ok());
  const auto& artifacts = recipe->versions.front().builds.front().artifacts;
  REQUIRE(artifacts.size() == 1);  // one file, two places
  CHECK(artifacts.front().url == "https://www.python.org/ftp/python/3.9.2/Python-3.9.2.tar.xz");
  CHECK(artifacts.front().also_at ==
        std::vector<std::string>{
            "https://deb.debian.org/debian/pool/main/p/python3.9/python3.9_3.9.2.orig.tar.xz"});
  CHECK(artifacts.front().size == 18889164);  // Debian's index states it
  // 3.11.2 has no Debian copy of its recorded file.
  const auto other = db->load_version("python", specs::Version::parse("3.11.2").value());
  REQUIRE(other.ok());
  CHECK(other->versions.front().builds.front().artifacts.front().also_at.empty());

  SECTION("also-at is written and read back in a recipe file") {
    const auto text = write_artifacts(recipe->versions.front(), ArtifactSet::offline);
    CHECK_THAT(text,
               Contains("    url: https://www.python.org/ftp/python/3.9.2/Python-3.9.2.tar.xz\n"
                        "    also-at:\n"
                        "      - https://deb.debian.org/debian/pool/main/p/python3.9/"
                        "python3.9_3.9.2.orig.tar.xz\n"
                        "    sha256: "));
    Recipe again = plain;
    REQUIRE(read_artifacts(text, "3.9.2.yaml", again).ok());
    const auto& read = again.find(specs::Version::parse("3.9.2").value())->builds.front();
    CHECK(read.artifacts.front().also_at == artifacts.front().also_at);
  }
}

}  // namespace envkit::recipes::debian_python_test
