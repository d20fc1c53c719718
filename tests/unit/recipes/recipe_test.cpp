#include "envkit/recipes/recipe.hpp"

#include <catch2/catch.hpp>

#include "support/spec_literals.hpp"

using namespace envkit;
using namespace envkit::recipes;
using specs::Platform;

using envkit::test::spec;

namespace {

std::vector<std::string> names_of(const std::map<std::string, specs::VersionSpec>& requirements) {
  std::vector<std::string> names;
  for (const auto& [name, requirement] : requirements)
    names.push_back(name);
  return names;
}

// cuDNN 9's shape: cuda everywhere, zlib on Linux only.
Build cudnn9_build() {
  Build build{.id = "cuda12",
              .requires_ = {{"cuda", spec(">=12,<13")}, {"zlib", spec("")}},
              .requires_only_on = {{"zlib", {Platform::linux_x86_64, Platform::linux_aarch64}}}};
  build.platforms = {Platform::linux_x86_64, Platform::linux_aarch64, Platform::windows_x86_64};
  return build;
}

Recipe cudnn_with(Build build) {
  Recipe recipe{.name = "cudnn"};
  recipe.versions.push_back(
      {.version = specs::Version::parse("9.1.0.70").value(), .builds = {std::move(build)}});
  return recipe;
}

}  // namespace

TEST_CASE("requirements_on gives what applies on one platform", "[recipes][model]") {
  const Build build = cudnn9_build();
  CHECK(names_of(requirements_on(build, Platform::linux_x86_64)) ==
        std::vector<std::string>{"cuda", "zlib"});
  CHECK(names_of(requirements_on(build, Platform::linux_aarch64)) ==
        std::vector<std::string>{"cuda", "zlib"});
  const auto windows = requirements_on(build, Platform::windows_x86_64);
  CHECK(names_of(windows) == std::vector<std::string>{"cuda"});
  CHECK(windows.at("cuda").to_string() == "<13,>=12");

  Build everywhere = build;
  everywhere.requires_only_on.clear();
  CHECK(names_of(requirements_on(everywhere, Platform::windows_x86_64)) ==
        std::vector<std::string>{"cuda", "zlib"});
  CHECK(requirements_on(Build{}, Platform::linux_x86_64).empty());
}

TEST_CASE("merge_into keeps a requirement and its platforms together", "[recipes][model]") {
  SECTION("an update without the requirement keeps it and its platforms") {
    Recipe base = cudnn_with(cudnn9_build());
    merge_into(base,
               cudnn_with(Build{.id = "cuda12", .requires_ = {{"cuda", spec(">=12.1,<13")}}}));
    const auto& build = base.versions.at(0).builds.at(0);
    CHECK(build.requires_.at("cuda").to_string() == "<13,>=12.1");
    CHECK(build.requires_only_on.at("zlib").size() == 2);
    CHECK_FALSE(requirements_on(build, Platform::windows_x86_64).contains("zlib"));
  }
  SECTION("an update that gives the requirement everywhere lifts the restriction") {
    Recipe base = cudnn_with(cudnn9_build());
    merge_into(base, cudnn_with(Build{.id = "cuda12", .requires_ = {{"zlib", spec("")}}}));
    const auto& build = base.versions.at(0).builds.at(0);
    CHECK(build.requires_only_on.empty());
    CHECK(requirements_on(build, Platform::windows_x86_64).contains("zlib"));
  }
  SECTION("an update that restricts a requirement restricts it") {
    Build everywhere = cudnn9_build();
    everywhere.requires_only_on.clear();
    Recipe base = cudnn_with(everywhere);
    merge_into(base, cudnn_with(cudnn9_build()));
    CHECK(base.versions.at(0).builds.at(0).requires_only_on == cudnn9_build().requires_only_on);
  }
}

TEST_CASE("canonicalize sorts the platforms of a restriction", "[recipes][model]") {
  Build build = cudnn9_build();
  build.requires_only_on["zlib"] = {Platform::linux_aarch64, Platform::linux_x86_64,
                                    Platform::linux_aarch64};
  Recipe recipe = cudnn_with(build);
  canonicalize(recipe);
  CHECK(recipe.versions[0].builds[0].requires_only_on.at("zlib") ==
        std::vector<Platform>{Platform::linux_x86_64, Platform::linux_aarch64});
}

TEST_CASE("a runfile with its era's layout is installable, one without is not",
          "[recipes][model][runfile]") {
  Artifact runfile{.platform = Platform::linux_x86_64,
                   .component = "cuda",
                   .kind = ArtifactKind::runfile,
                   .url = "https://nvidia.example/cuda_10.2.89_440.33.01_linux.run",
                   .sha256 = std::string(64, 'a'),
                   .format = "run",
                   .layout = Layout::cuda_runfile_builds,
                   .components = {"cuda_cudart"}};
  Build build{.platforms = {Platform::linux_x86_64}, .artifacts = {runfile}};
  CHECK(installable_on(build, Platform::linux_x86_64));
  CHECK(runfile_only_platforms(build).empty());

  build.artifacts[0].layout = Layout::none;
  CHECK_FALSE(installable_on(build, Platform::linux_x86_64));
  CHECK(runfile_only_platforms(build) == std::vector<Platform>{Platform::linux_x86_64});

  // The facts file alone: what `runfile-only:` says.
  Build facts{.platforms = {Platform::linux_x86_64}, .runfile_only = {Platform::linux_x86_64}};
  CHECK_FALSE(installable_on(facts, Platform::linux_x86_64));
  facts.runfile_only.clear();
  CHECK(installable_on(facts, Platform::linux_x86_64));
}
