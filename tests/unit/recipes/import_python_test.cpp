#include "envkit/recipes/import_python.hpp"

#include <catch2/catch.hpp>
#include <filesystem>

#include "envkit/sys/fs.hpp"
#include "recipes_test_support.hpp"
#include "support/envkit_runner.hpp"
#include "support/skip.hpp"

namespace fs = std::filesystem;
using envkit::recipes::Artifact;
using envkit::recipes::ArtifactKind;
using envkit::recipes::import_python_standalone;
using envkit::recipes::Layout;
using envkit::recipes::Recipe;
using envkit::specs::Platform;
using envkit::specs::Version;

namespace {

Recipe import_fixture() {
  const auto path = envkit::test::test_data_dir() / "recipes" / "other" / "python_downloads.json";
  auto recipe = import_python_standalone(envkit::sys::read_file(path).value(), "downloads.json");
  INFO((recipe.ok() ? "" : recipe.error().to_string()));
  REQUIRE(recipe);
  return *recipe;
}

const Artifact* artifact_for(const Recipe& recipe, std::string_view version, Platform platform) {
  const auto* entry = recipe.find(Version::parse(version).value());
  if (entry == nullptr) return nullptr;
  for (const auto& artifact : entry->builds.front().artifacts) {
    if (artifact.platform == platform) return &artifact;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("python: CPython 3.8 to 3.14 final releases with a hashed archive", "[other][python]") {
  const auto recipe = import_fixture();
  CHECK(recipe.name == "python");
  CHECK(recipe.sources == std::vector<std::string>{"downloads.json"});
  // 3.15 and 3.7 are outside the range, 3.14.0rc3 is a pre-release, 3.8.19 and 3.9.6
  // have no sha256.
  CHECK(envkit::test::versions_of(recipe) ==
        std::vector<std::string>{"3.8.20", "3.9.7", "3.12.2", "3.12.14"});
}

TEST_CASE("python: a full archive serves a version that has no install_only one",
          "[other][python]") {
  const auto recipe = import_fixture();
  const auto* full = artifact_for(recipe, "3.9.7", Platform::linux_x86_64);
  REQUIRE(full != nullptr);
  CHECK(full->layout == Layout::python_standalone_full);
  CHECK(full->format == "tar.zst");
  CHECK(full->url.ends_with("-x86_64-unknown-linux-gnu-pgo%2Blto-20211017T1616.tar.zst"));
  CHECK(full->sha256 == std::string(64, 'f'));
  // Where install_only exists (3.12.2), the full archive beside it is not taken.
  const auto* install_only = artifact_for(recipe, "3.12.2", Platform::linux_x86_64);
  REQUIRE(install_only != nullptr);
  CHECK(install_only->layout == Layout::python_standalone);
  CHECK(install_only->sha256 == std::string(64, 'e'));
}

TEST_CASE("python: platforms map from os/arch/libc, variants and other arches are skipped",
          "[other][python]") {
  const auto recipe = import_fixture();
  const auto& build = recipe.find(Version::parse("3.12.14").value())->builds;
  REQUIRE(build.size() == 1);
  CHECK(build[0].id.empty());
  CHECK(build[0].platforms == std::vector<Platform>{Platform::linux_x86_64, Platform::linux_aarch64,
                                                    Platform::windows_x86_64});
  // One archive per platform: the baseline x86_64 gnu build, not v3, musl, freethreaded or debug.
  REQUIRE(build[0].artifacts.size() == 3);
  const auto* linux_archive = artifact_for(recipe, "3.12.14", Platform::linux_x86_64);
  REQUIRE(linux_archive != nullptr);
  CHECK(linux_archive->url.ends_with("-x86_64-unknown-linux-gnu-install_only_stripped.tar.gz"));
  CHECK(linux_archive->sha256 == std::string(64, 'a'));
  CHECK(linux_archive->component == "python");
  CHECK(linux_archive->kind == ArtifactKind::archive);
  CHECK(linux_archive->layout == Layout::python_standalone);
  CHECK(linux_archive->format == "tar.gz");
  CHECK_FALSE(linux_archive->size.has_value());  // the metadata gives no sizes
  CHECK(artifact_for(recipe, "3.12.14", Platform::linux_aarch64)->sha256 == std::string(64, 'b'));
  CHECK(artifact_for(recipe, "3.12.14", Platform::windows_x86_64)->url.find("pc-windows-msvc") !=
        std::string::npos);
}

TEST_CASE("python: stripped archives win, plain install_only is the fallback", "[other][python]") {
  const auto recipe = import_fixture();
  CHECK(artifact_for(recipe, "3.12.2", Platform::linux_x86_64)->sha256 == std::string(64, 'e'));
  const auto* windows = artifact_for(recipe, "3.12.2", Platform::windows_x86_64);
  REQUIRE(windows != nullptr);
  CHECK(windows->url.ends_with("-shared-install_only.tar.gz"));
  const auto* aarch64 = artifact_for(recipe, "3.8.20", Platform::linux_aarch64);
  REQUIRE(aarch64 != nullptr);
  CHECK(aarch64->format == "tar.zst");
  CHECK(recipe.find(Version::parse("3.8.20").value())->builds[0].platforms ==
        std::vector<Platform>{Platform::linux_aarch64});
}

TEST_CASE("python: malformed metadata is an error naming the file and entry", "[other][python]") {
  auto not_json = import_python_standalone("[1, 2", "d.json");
  REQUIRE_FALSE(not_json);
  CHECK(not_json.error().headline() == "d.json: not a JSON object of downloads");

  auto missing_url = import_python_standalone(
      R"({"cpython-3.12.0-linux-x86_64-gnu": {"name": "cpython",
          "arch": {"family": "x86_64", "variant": null}, "os": "linux_archive", "libc": "gnu",
          "major": 3, "minor": 12, "patch": 0, "prerelease": "", "sha256": null,
          "variant": null}})",
      "d.json");
  REQUIRE_FALSE(missing_url);
  CHECK(missing_url.error().headline() ==
        "d.json: entry `cpython-3.12.0-linux-x86_64-gnu` is malformed");
}

TEST_CASE("python: the real uv metadata has every minor 3.8-3.14 on all three platforms",
          "[other][upstream]") {
  const auto file = envkit::test::test_data_dir() / ".." / ".." / ".." / "shared" / "upstream" /
                    "python-build-standalone-uv" / "download-metadata.json";
  if (!fs::exists(file)) {
    envkit::test::skip_test(envkit::test::SkipKind::expected,
                            "no upstream data at " + file.string());
    return;
  }
  auto recipe = import_python_standalone(envkit::sys::read_file(file).value(), file.string());
  REQUIRE(recipe);
  const auto* linux_archive = artifact_for(*recipe, "3.12.14", Platform::linux_x86_64);
  REQUIRE(linux_archive != nullptr);
  CHECK(linux_archive->sha256 ==
        "5acfa3e9ba26b51ae161c83aff278da915b590d22373a424b2ba55b8afe91fcc");
  for (const auto* latest :
       {"3.8.20", "3.9.25", "3.10.21", "3.11.16", "3.12.14", "3.13.15", "3.14.7"}) {
    INFO(latest);
    CHECK(artifact_for(*recipe, latest, Platform::linux_x86_64) != nullptr);
    CHECK(artifact_for(*recipe, latest, Platform::windows_x86_64) != nullptr);
  }
  // 3.8.2 ... 3.8.11 exist only as full archives; 3.8.0, 3.8.1 and 3.8.4 not at all.
  const auto* full = artifact_for(*recipe, "3.8.5", Platform::linux_x86_64);
  REQUIRE(full != nullptr);
  CHECK(full->layout == Layout::python_standalone_full);
  CHECK(artifact_for(*recipe, "3.8.4", Platform::linux_x86_64) == nullptr);
  CHECK(recipe->versions.front().version.original() == "3.8.2");
  CHECK(recipe->versions.back().version.original() == "3.14.7");
}
