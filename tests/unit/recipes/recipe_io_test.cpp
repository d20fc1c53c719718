#include "envkit/recipes/recipe_io.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <catch2/catch.hpp>

#include "support/spec_literals.hpp"

using namespace envkit;
using namespace envkit::recipes;

using envkit::test::spec;
using envkit::test::v;

namespace {

Recipe sample_cudnn() {
  Artifact archive{.platform = specs::Platform::linux_x86_64,
                   .component = "cudnn",
                   .kind = ArtifactKind::archive,
                   .url =
                       "https://developer.download.nvidia.com/compute/cudnn/redist/cudnn/"
                       "linux-x86_64/cudnn-linux-x86_64-9.1.0.70_cuda12-archive.tar.xz",
                   .sha256 = std::string(64, 'a'),
                   .size = 862715244,
                   .format = "tar.xz",
                   .layout = Layout::nvidia_redist,
                   .wheel_root = ""};
  Artifact wheel = archive;
  wheel.kind = ArtifactKind::wheel;
  wheel.format = "whl";
  wheel.layout = Layout::nvidia_wheel;
  wheel.wheel_root = "nvidia/cudnn";
  wheel.url = "https://files.example/nvidia_cudnn_cu12-9.1.0.70-py3-none-manylinux2014_x86_64.whl";
  wheel.size.reset();
  Build cuda12{.id = "cuda12",
               .requires_ = {{"cuda", spec(">=12,<13")}, {"zlib", spec("")}},
               .min_driver = {},
               .min_driver_compat = {},
               .tested = {{"cuda", "12.4"}},
               .cuda_arch = {{5, 0}, {9, 0}},
               .platforms = {specs::Platform::linux_x86_64},
               .artifacts = {archive, wheel}};
  Recipe recipe{.name = "cudnn",
                .sources = {"nvidia-redist-cudnn/redistrib_9.1.0.json"},
                .default_components = {},
                .versions = {{.version = v("9.1.0.70"),
                              .release_date = "2024-04-12",
                              .components = {},
                              .builds = {cuda12}}}};
  return recipe;
}

}  // namespace

TEST_CASE("facts and artifacts round-trip through YAML", "[recipes][io]") {
  const Recipe original = sample_cudnn();
  const std::string facts = write_facts(original);
  const std::string offline = write_artifacts(original.versions[0], ArtifactSet::offline);
  const std::string wheels = write_artifacts(original.versions[0], ArtifactSet::wheels);
  CHECK_THAT(facts, Catch::Contains("  - version: \"9.1.0.70\"\n"));
  CHECK_THAT(facts, Catch::Contains("        requires:\n          cuda: \"<13,>=12\"\n"
                                    "          zlib: \"\"\n"));
  CHECK_THAT(offline, !Catch::Contains("whl"));
  CHECK_THAT(wheels, Catch::Contains("wheel-root: nvidia/cudnn"));

  auto read = read_facts(facts, "cudnn.yaml");
  if (!read) FAIL(read.error().to_string());
  REQUIRE(read_artifacts(offline, "cudnn/9.1.0.70.yaml", *read));
  REQUIRE(read_artifacts(wheels, "pypi/cudnn/9.1.0.70.yaml", *read));
  canonicalize(*read);
  Recipe expected = original;
  canonicalize(expected);
  CHECK(write_facts(*read) == facts);
  const auto& build = read->versions.at(0).builds.at(0);
  CHECK(build.artifacts == expected.versions[0].builds[0].artifacts);
  CHECK(build.tested.at("cuda") == "12.4");
  CHECK(build.requires_.at("zlib").empty());
  CHECK(read->versions[0].version.original() == "9.1.0.70");
}

TEST_CASE("a source artifact's build system round-trips, and an unknown one is located",
          "[recipes][io]") {
  Artifact source{.platform = specs::Platform::linux_x86_64,
                  .component = "zlib",
                  .kind = ArtifactKind::source,
                  .url = "http://zlib.net/fossils/zlib-1.3.1.tar.gz",
                  .sha256 = std::string(64, 'b'),
                  .size = std::nullopt,
                  .format = "tar.gz",
                  .layout = Layout::source_tree,
                  .wheel_root = "",
                  .build_system = BuildSystem::configure};
  Build build{.platforms = {specs::Platform::linux_x86_64}, .artifacts = {source}};
  Recipe zlib{.name = "zlib",
              .sources = {},
              .default_components = {},
              .versions = {{.version = v("1.3.1"), .builds = {build}}}};
  const auto text = write_artifacts(zlib.versions[0], ArtifactSet::offline);
  CHECK_THAT(text, Catch::Contains("    layout: source-tree\n    build-system: configure\n"));
  auto read = read_facts(write_facts(zlib), "zlib.yaml");
  REQUIRE(read);
  REQUIRE(read_artifacts(text, "zlib/1.3.1.yaml", *read));
  CHECK(read->versions[0].builds[0].artifacts.at(0).build_system == BuildSystem::configure);

  auto reread = read_facts(write_facts(zlib), "zlib.yaml");
  REQUIRE(reread);
  std::string bad = text;
  bad.replace(bad.find("build-system: configure"), 23, "build-system: meson");
  auto refused = read_artifacts(bad, "zlib/1.3.1.yaml", *reread);
  REQUIRE_FALSE(refused);
  CHECK_THAT(refused.error().headline(),
             Catch::EndsWith("`build-system`: expected configure or cmake, found `meson`"));
}

TEST_CASE("facts without versions round-trip through YAML", "[recipes][io]") {
  // Written as `versions:` alone, the list read back as null, which the reader refuses.
  const Recipe empty{.name = "zlib", .sources = {"https://zlib.net"}};
  const std::string facts = write_facts(empty);
  CHECK_THAT(facts, Catch::Contains("versions: []\n"));
  auto read = read_facts(facts, "zlib.yaml");
  INFO((read ? std::string() : read.error().to_string()));
  REQUIRE(read);
  CHECK(read->name == "zlib");
  CHECK(read->versions.empty());
  CHECK(write_facts(*read) == facts);
}

TEST_CASE("drivers keep upstream spelling", "[recipes][io]") {
  Recipe cuda{.name = "cuda", .sources = {}, .default_components = {"cuda_cudart"}, .versions = {}};
  Build build;
  build.min_driver.emplace(specs::Platform::linux_x86_64, v("450.80.02"));
  build.min_driver_compat.emplace(specs::Platform::windows_x86_64, v("452.39"));
  build.platforms = {specs::Platform::linux_x86_64};
  cuda.versions.push_back({.version = v("11.4.2"),
                           .release_date = {},
                           .components = {{"cuda_cudart", "11.4.108"}},
                           .builds = {build}});
  const auto text = write_facts(cuda);
  CHECK_THAT(text, Catch::Contains("      - min-driver:\n          linux-x86_64: \"450.80.02\"\n"));
  auto read = read_facts(text, "cuda.yaml");
  REQUIRE(read);
  CHECK(read->versions[0].builds[0].min_driver.at(specs::Platform::linux_x86_64).original() ==
        "450.80.02");
  CHECK(write_facts(*read) == text);
  // Component versions live in the version's artifacts file, read when it is locked.
  CHECK(read->versions[0].components.empty());
  const auto artifacts = write_artifacts(cuda.versions[0], ArtifactSet::offline);
  CHECK_THAT(artifacts, Catch::Contains("components:\n  cuda_cudart: \"11.4.108\"\n"));
  REQUIRE(read_artifacts(artifacts, "cuda/11.4.2.yaml", *read));
  CHECK(read->versions[0].components.at(0).version == "11.4.108");
}

TEST_CASE("recipe schema errors name file, line and column", "[recipes][io]") {
  const auto error_of = [](std::string_view text) {
    auto read = read_facts(text, "cuda.yaml");
    REQUIRE_FALSE(read);
    return read.error();
  };
  auto typo = error_of("name: cuda\nversion:\n  - version: \"1.0\"\n");
  CHECK(typo.headline() == "cuda.yaml:2:1: unknown key `version` in `recipe`");
  CHECK(typo.hints().at(0) == "did you mean `versions`?");

  auto bad_version = error_of(
      "name: cuda\nversions:\n  - version: \"1..0\"\n    builds:\n      - platforms: []\n");
  CHECK(bad_version.headline() == "cuda.yaml:3:14: `version`: `1..0` is not a valid version");

  auto bad_spec = error_of(
      "name: torch\nversions:\n  - version: \"2.1\"\n    builds:\n      - requires:\n"
      "          cuda: \">=11.8,<<12\"\n        platforms: [linux-x86_64]\n");
  CHECK(bad_spec.headline() == "cuda.yaml:6:17: `<<12` is not a valid version specifier");

  auto bad_platform = error_of(
      "name: cuda\nversions:\n  - version: \"12.4.1\"\n    builds:\n      - platforms: "
      "[linux-sbsa]\n");
  CHECK(bad_platform.headline() == "cuda.yaml:5:21: unknown platform `linux-sbsa`");

  auto no_builds = error_of("name: cuda\nversions:\n  - version: \"12.4.1\"\n");
  CHECK(no_builds.headline() == "cuda.yaml:3:5: version `12.4.1` has no builds");

  // Listed twice, in PEP 440's terms (`2.1` is `2.1.0`).
  auto twice = error_of(
      "name: torch\nversions:\n  - version: \"2.1.0\"\n    builds:\n      - platforms: "
      "[linux-x86_64]\n  - version: \"2.1\"\n    builds:\n      - platforms: [linux-x86_64]\n");
  CHECK(twice.headline() == "cuda.yaml:6:5: version `2.1` is listed twice");

  // The solver's own name for the driver, under `requires:`, once crashed `envkit lock`.
  auto driver = error_of(
      "name: zlib\nversions:\n  - version: \"1.3.1\"\n    builds:\n      - requires:\n"
      "          __driver: \">=450\"\n        platforms: [linux-x86_64]\n");
  CHECK(driver.headline() ==
        "cuda.yaml:6:21: `requires` names `__driver`, a name envkit keeps for the machine's facts");
  CHECK_THAT(driver.hints().at(0), Catch::Contains("min-driver"));
}

TEST_CASE("artifact files must match the recipe", "[recipes][io]") {
  Recipe recipe = sample_cudnn();
  auto unknown_build = read_artifacts(
      "version: \"9.1.0.70\"\nartifacts:\n  - build: cuda13\n    platform: linux-x86_64\n"
      "    component: cudnn\n    kind: archive\n    format: tar.xz\n    layout: nvidia-redist\n"
      "    url: \"https://x/y.tar.xz\"\n    sha256: \"" +
          std::string(64, 'b') + "\"\n",
      "cudnn/9.1.0.70.yaml", recipe);
  REQUIRE_FALSE(unknown_build);
  CHECK(unknown_build.error().headline() ==
        "cudnn/9.1.0.70.yaml:3:5: cudnn 9.1.0.70 has no build `cuda13`");
  auto bad_kind = read_artifacts(
      "version: \"9.1.0.70\"\nartifacts:\n  - build: cuda12\n    platform: linux-x86_64\n"
      "    kind: tarball\n    url: u\n    sha256: s\n",
      "cudnn/9.1.0.70.yaml", recipe);
  REQUIRE_FALSE(bad_kind);
  CHECK(bad_kind.error().headline() ==
        "cudnn/9.1.0.70.yaml:5:11: `kind`: expected archive, wheel, runfile or source, found "
        "`tarball`");
}

namespace {

constexpr std::string_view kOnlyOnLinux =
    "name: cudnn\n"
    "versions:\n"
    "  - version: \"9.1.0.70\"\n"
    "    builds:\n"
    "      - id: cuda12\n"
    "        requires:\n"
    "          cuda: \"<13,>=12\"\n"
    "          zlib: \"\"\n"
    "        requires-only-on:\n"
    "          zlib: [linux-x86_64, linux-aarch64]\n"
    "        platforms: [linux-x86_64, linux-aarch64, windows-x86_64]\n";

}  // namespace

TEST_CASE("requirements restricted to platforms round-trip through YAML", "[recipes][io]") {
  auto read = read_facts(kOnlyOnLinux, "cudnn.yaml");
  if (!read) FAIL(read.error().to_string());
  const auto& build = read->versions.at(0).builds.at(0);
  CHECK(build.requires_.size() == 2);
  CHECK(
      build.requires_only_on.at("zlib") ==
      std::vector<specs::Platform>{specs::Platform::linux_x86_64, specs::Platform::linux_aarch64});
  CHECK_FALSE(build.requires_only_on.contains("cuda"));
  const std::string written = write_facts(*read);
  CHECK_THAT(written, Catch::Contains(std::string(kOnlyOnLinux.substr(kOnlyOnLinux.find("  - ")))));

  // Written from the model: after `requires:`, platforms in canonical order.
  Recipe recipe = sample_cudnn();
  recipe.versions[0].builds[0].requires_only_on["zlib"] = {specs::Platform::linux_aarch64,
                                                           specs::Platform::linux_x86_64};
  canonicalize(recipe);
  const std::string facts = write_facts(recipe);
  CHECK_THAT(facts, Catch::Contains("          zlib: \"\"\n        requires-only-on:\n"
                                    "          zlib: [linux-x86_64, linux-aarch64]\n"
                                    "        tested:\n"));
  auto again = read_facts(facts, "cudnn.yaml");
  REQUIRE(again);
  CHECK(again->versions[0].builds[0].requires_only_on ==
        recipe.versions[0].builds[0].requires_only_on);
  CHECK(write_facts(*again) == facts);
}

TEST_CASE("requires-only-on errors name file, line and column", "[recipes][io]") {
  const auto error_of = [](std::string_view from, std::string_view to) {
    std::string text(kOnlyOnLinux);
    text.replace(text.find(from), from.size(), to);
    auto read = read_facts(text, "cudnn.yaml");
    REQUIRE_FALSE(read);
    CHECK(read.error().code() == ErrorCode::input);
    return read.error();
  };
  SECTION("a package that `requires` lacks") {
    auto error = error_of("          zlib: \"\"\n", "");
    CHECK(error.headline() ==
          "cudnn.yaml:9:11: `requires-only-on` names `zlib`, which is not in `requires`");
    CHECK(error.hints().at(0) == "list `zlib` under `requires:` too, or remove it here");
  }
  SECTION("an unknown platform") {
    auto error = error_of("linux-aarch64]\n        platforms", "linux-sbsa]\n        platforms");
    CHECK(error.headline() == "cudnn.yaml:10:32: unknown platform `linux-sbsa`");
  }
  SECTION("not a list, or an empty one") {
    CHECK(error_of("[linux-x86_64, linux-aarch64]", "linux-x86_64").headline() ==
          "cudnn.yaml:10:17: `zlib`: expected a list of platforms, found `linux-x86_64`");
    CHECK(error_of("[linux-x86_64, linux-aarch64]", "[]").headline() ==
          "cudnn.yaml:10:17: `zlib`: expected a list of platforms, found an empty list");
  }
  SECTION("not a mapping") {
    CHECK(
        error_of("\n          zlib: [linux-x86_64, linux-aarch64]", " [linux-x86_64]").headline() ==
        "cudnn.yaml:9:27: `requires-only-on`: expected a mapping, found a list");
  }
}

TEST_CASE("a build's glibc minimum round-trips per platform, and a bad one is located",
          "[recipes][io]") {
  Recipe recipe = sample_cudnn();
  recipe.versions[0].builds[0].min_glibc = {{specs::Platform::linux_x86_64, v("2.17")}};
  const std::string facts = write_facts(recipe);
  CHECK_THAT(facts, Catch::Contains("        min-glibc:\n          linux-x86_64: \"2.17\"\n"));
  auto read = read_facts(facts, "cudnn.yaml");
  if (!read) FAIL(read.error().to_string());
  CHECK(read->versions[0].builds[0].min_glibc.at(specs::Platform::linux_x86_64) == v("2.17"));

  std::string bad = facts;
  bad.replace(bad.find("linux-x86_64: \"2.17\""), 20, "linux-x86_64: [2.17]");
  auto error = read_facts(bad, "cudnn.yaml");
  REQUIRE_FALSE(error);
  CHECK_THAT(error.error().headline(), Catch::StartsWith("cudnn.yaml:"));
  CHECK_THAT(error.error().headline(), Catch::Contains("min-glibc"));
}

namespace {

// CUDA 9.1.85 as the importer writes it: its runfile, two of its patches (real URLs and
// sha256 from legacy-cuda-cudnn-nixpkgs-old).
Recipe runfile_cuda() {
  Artifact runfile{
      .platform = specs::Platform::linux_x86_64,
      .component = "cuda",
      .kind = ArtifactKind::runfile,
      .url =
          "https://developer.nvidia.com/compute/cuda/9.1/Prod/local_installers/"
          "cuda_9.1.85_387.26_linux",
      .sha256 = "8496c72b16fee61889f9281449b5d633d0b358b46579175c275d85c9205fe953",
      .size = std::nullopt,
      .format = "run",
      .layout = Layout::cuda_runfile_nested,
      .wheel_root = "",
      .build_system = std::nullopt,
      .components = {"cuda_cudart", "cuda_nvcc", "libcublas"},
      .patches = {
          {.url = "https://developer.nvidia.com/compute/cuda/9.1/Prod/patches/1/"
                  "cuda_9.1.85.1_linux",
           .sha256 = "af9ce3d7ce4ea3b9b075135640077695f420d5dc585d76cbdae09d658b8ca3b8",
           .size = 1234},
          {.url = "https://developer.nvidia.com/compute/cuda/9.1/Prod/patches/2/"
                  "cuda_9.1.85.2_linux",
           .sha256 = "d59f07a35ba750fc8ab04e144e7556d03b57a4f1a0060f895615af0113e0e099",
           .size = std::nullopt},
      }};
  Build build{.platforms = {specs::Platform::linux_x86_64}, .artifacts = {runfile}};
  return Recipe{.name = "cuda",
                .sources = {},
                .default_components = {},
                .versions = {{.version = v("9.1.85"), .builds = {build}}}};
}

}  // namespace

TEST_CASE("a runfile's components and patches round-trip through YAML", "[recipes][io]") {
  const Recipe cuda = runfile_cuda();
  const auto text = write_artifacts(cuda.versions[0], ArtifactSet::offline);
  CHECK_THAT(text, Catch::Contains("    layout: cuda-runfile-nested\n"
                                   "    components: [cuda_cudart, cuda_nvcc, libcublas]\n"
                                   "    url: "));
  CHECK_THAT(text, Catch::Contains("    patches:\n"
                                   "      - url: https://developer.nvidia.com/compute/cuda/9.1/"
                                   "Prod/patches/1/cuda_9.1.85.1_linux\n"
                                   "        sha256: af9ce3d7"));
  CHECK_THAT(text, Catch::Contains("        size: 1234\n"));
  auto read = read_facts(write_facts(cuda), "cuda.yaml");
  REQUIRE(read);
  auto artifacts = read_artifacts(text, "cuda/9.1.85.yaml", *read);
  if (!artifacts) FAIL(artifacts.error().to_string());
  // The patches keep their order: it is the order they are applied in.
  CHECK(read->versions[0].builds[0].artifacts == cuda.versions[0].builds[0].artifacts);
  CHECK(write_artifacts(read->versions[0], ArtifactSet::offline) == text);
}

TEST_CASE("bad runfile components and patches name file, line and column", "[recipes][io]") {
  const Recipe cuda = runfile_cuda();
  const auto text = write_artifacts(cuda.versions[0], ArtifactSet::offline);
  const auto refused = [&](const std::string& bad) {
    auto read = read_facts(write_facts(cuda), "cuda.yaml");
    REQUIRE(read);
    auto artifacts = read_artifacts(bad, "cuda/9.1.85.yaml", *read);
    REQUIRE_FALSE(artifacts);
    return artifacts.error();
  };
  const auto line_of = [&](std::string_view needle) {
    const auto at = text.find(needle);
    REQUIRE(at != std::string::npos);
    return 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n');
  };

  SECTION("a patch without sha256") {
    std::string bad = text;
    const auto sha = bad.find("        sha256: d59f07a3");
    bad.erase(sha, bad.find('\n', sha) - sha + 1);
    const auto error = refused(bad);
    CHECK(error.headline() == fmt::format("cuda/9.1.85.yaml:{}:9: a patch needs `url:` and "
                                          "`sha256:`",
                                          line_of("      - url: https://developer.nvidia.com/"
                                                  "compute/cuda/9.1/Prod/patches/2/")));
  }
  SECTION("a patch whose sha256 is not 64 lowercase hex digits") {
    std::string bad = text;
    bad.replace(bad.find("d59f07a3"), 8, "D59F07A3");
    CHECK(refused(bad).headline() ==
          fmt::format("cuda/9.1.85.yaml:{}:17: `sha256`: expected 64 lowercase hex digits, "
                      "found `D59F07A35ba750fc8ab04e144e7556d03b57a4f1...`",
                      line_of("        sha256: d59f07a3")));
  }
  SECTION("a component named twice") {
    std::string bad = text;
    bad.replace(bad.find("libcublas]"), 9, "cuda_nvcc");
    CHECK(refused(bad).headline() ==
          fmt::format("cuda/9.1.85.yaml:{}:42: `components` names `cuda_nvcc` twice",
                      line_of("    components: ")));
  }
  SECTION("an unknown key in a patch") {
    std::string bad = text;
    bad.replace(bad.find("        size: 1234"), 18, "        bytes: 1234");
    const auto error = refused(bad);
    CHECK_THAT(error.headline(), Catch::EndsWith("unknown key `bytes` in `patches`"));
  }
}

TEST_CASE("versions are ranked by version whatever their order in the file", "[recipes][io]") {
  // Newest first once locked an older torch without a word.
  auto recipe = read_facts(
      "name: torch\nversions:\n  - version: \"2.1.2\"\n    builds:\n      - platforms: "
      "[linux-x86_64]\n  - version: \"2.0.1\"\n    builds:\n      - platforms: [linux-x86_64]\n"
      "  - version: \"2.1.0\"\n    builds:\n      - platforms: [linux-x86_64]\n",
      "torch.yaml");
  REQUIRE(recipe);
  std::vector<std::string> order;
  for (const auto& version : recipe->versions)
    order.push_back(version.version.original());
  CHECK(order == std::vector<std::string>{"2.0.1", "2.1.0", "2.1.2"});
}
