#include "envkit/recipes/import_pypi_cuda.hpp"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "recipes_test_support.hpp"
#include "support/spec_literals.hpp"

using namespace envkit::recipes;
namespace specs = envkit::specs;
using Catch::Matchers::Contains;
using envkit::test::build_of;
using envkit::test::fake_index_url;
using envkit::test::FakeIndex;
using envkit::test::json_page;
using envkit::test::spec;
using envkit::test::v;
using envkit::test::versions_of;

namespace {

constexpr std::string_view kFiles = "https://files.example.test/";

// The database's CUDA as it stood: 13.0.2 the newest, with its family minimum and archs.
Recipe known_cuda() {
  Build build{.min_driver = {{specs::Platform::linux_x86_64, v("580.95.05")}},
              .min_driver_compat = {{specs::Platform::linux_x86_64, v("580.65.06")}},
              .cuda_arch = {specs::ComputeCapability{7, 5}, specs::ComputeCapability{12, 1}},
              .platforms = {specs::Platform::linux_x86_64}};
  return Recipe{.name = "cuda",
                .default_components = {"cuda_cudart", "libcublas", "libnvjitlink"},
                .versions = {RecipeVersion{.version = v("13.0.2"), .builds = {build}}}};
}

Recipe known_cudnn() {
  Build cuda13{.id = "cuda13",
               .requires_ = {{"cuda", spec("<14,>=13")}, {"zlib", spec("")}},
               .requires_only_on = {{"zlib", {specs::Platform::linux_x86_64}}},
               .platforms = {specs::Platform::linux_x86_64}};
  return Recipe{.name = "cudnn",
                .versions = {RecipeVersion{.version = v("9.22.0.52"), .builds = {cuda13}}}};
}

// cuda-toolkit 13.2.2's METADATA as PyPI serves it (abridged: three of its extras).
constexpr std::string_view kToolkitMetadata =
    "Metadata-Version: 2.1\nName: cuda-toolkit\nVersion: 13.2.2\n"
    "Requires-Dist: nvidia-cuda-runtime==13.2.86.*; (sys_platform == 'linux' and "
    "platform_machine == 'x86_64') and extra == 'cudart'\n"
    "Requires-Dist: nvidia-cublas==13.4.1.3.*; (sys_platform == 'linux' and platform_machine == "
    "'x86_64') and extra == 'cublas'\n"
    "Requires-Dist: nvidia-nvjitlink<14,>=13.2.86; (sys_platform == 'linux' and "
    "platform_machine == 'x86_64') and extra == 'nvjitlink'\n";

FakeIndex nvidia_index() {
  FakeIndex index;
  const std::string toolkit = "cuda_toolkit-13.2.2-py2.py3-none-any.whl";
  index.add("cuda-toolkit", "application/vnd.pypi.simple.v1+json",
            json_page({"cuda_toolkit-13.0.2-py2.py3-none-any.whl", toolkit,
                       "cuda_toolkit-13.4.0rc1-py2.py3-none-any.whl"}));
  index.add_url(std::string(kFiles) + toolkit + ".metadata", "text/plain",
                std::string(kToolkitMetadata));
  index.add("nvidia-cuda-runtime", "application/vnd.pypi.simple.v1+json",
            json_page({"nvidia_cuda_runtime-13.2.86-py3-none-manylinux2014_x86_64.whl",
                       "nvidia_cuda_runtime-13.2.86-py3-none-manylinux2014_aarch64.whl"}));
  index.add("nvidia-cublas", "application/vnd.pypi.simple.v1+json",
            json_page({"nvidia_cublas-13.4.1.3-py3-none-manylinux2014_x86_64.whl"}));
  index.add("nvidia-cudnn-cu13", "application/vnd.pypi.simple.v1+json",
            json_page({"nvidia_cudnn_cu13-9.22.0.52-py3-none-manylinux_2_27_x86_64.whl",
                       "nvidia_cudnn_cu13-9.26.0.51-py3-none-manylinux_2_27_x86_64.whl",
                       "nvidia_cudnn_cu13-9.27.0.1rc1-py3-none-manylinux_2_27_x86_64.whl"}));
  return index;
}

}  // namespace

TEST_CASE("a component's pin in cuda-toolkit's METADATA names its version", "[pypi-cuda]") {
  CHECK(pinned_component_version("==13.2.86.*") == "13.2.86");
  CHECK(pinned_component_version(">=13.2.86,<14") == "13.2.86");
  CHECK(pinned_component_version("==13.0.96") == "13.0.96");
  CHECK_FALSE(pinned_component_version("<14"));
  CHECK_FALSE(pinned_component_version("not a spec"));
}

TEST_CASE("a CUDA release newer than the database is made from NVIDIA's wheels", "[pypi-cuda]") {
  FakeIndex index = nvidia_index();
  auto imported = import_pypi_cuda_releases(
      known_cuda(), known_cudnn(), {.index_url = fake_index_url(), .fetch = index.fetcher()});
  REQUIRE(imported);
  // 13.0.2 is known, 13.4.0rc1 a pre-release: 13.2.2 alone is new.
  REQUIRE(versions_of(imported->cuda) == std::vector<std::string>{"13.2.2"});
  const auto& release = imported->cuda.versions.front();
  CHECK(release.components == std::vector<Component>{{"cuda_cudart", "13.2.86"},
                                                     {"libcublas", "13.4.1.3"},
                                                     {"libnvjitlink", "13.2.86"}});
  const Build& build = release.builds.front();
  // The runtime has wheels for both Linux platforms; nvjitlink none (not on this index).
  CHECK(build.platforms ==
        std::vector{specs::Platform::linux_x86_64, specs::Platform::linux_aarch64});
  std::vector<std::string> components;
  for (const auto& artifact : build.artifacts) {
    CHECK(artifact.kind == ArtifactKind::wheel);
    CHECK(artifact.wheel_root == "nvidia/cu13");
    components.push_back(artifact.component + " " +
                         std::string(specs::to_string(artifact.platform)));
  }
  CHECK(components == std::vector<std::string>{"cuda_cudart linux-x86_64", "libcublas linux-x86_64",
                                               "cuda_cudart linux-aarch64"});
  // What no index says comes from the family's newest release, and a note says so: the
  // minor-version-compatibility minimum and the architectures, never a native driver.
  CHECK(build.min_driver.empty());
  CHECK(build.min_driver_compat.at(specs::Platform::linux_x86_64).original() == "580.65.06");
  CHECK(build.cuda_arch.size() == 2);
  REQUIRE_FALSE(imported->notes.empty());
  CHECK_THAT(imported->notes.front(),
             Contains("cuda 13.2.2") && Contains("580.65.06") && Contains("as of cuda 13.0.2"));
}

TEST_CASE("a cuDNN release newer than the database takes its build's requirements", "[pypi-cuda]") {
  FakeIndex index = nvidia_index();
  auto imported = import_pypi_cuda_releases(
      known_cuda(), known_cudnn(), {.index_url = fake_index_url(), .fetch = index.fetcher()});
  REQUIRE(imported);
  REQUIRE(versions_of(imported->cudnn) == std::vector<std::string>{"9.26.0.51"});
  const Build& build = build_of(imported->cudnn, "9.26.0.51", "cuda13");
  CHECK(build.requires_.at("cuda").to_string() == spec("<14,>=13").to_string());
  CHECK(build.requires_.contains("zlib"));
  CHECK(build.requires_only_on.at("zlib") == std::vector{specs::Platform::linux_x86_64});
  REQUIRE(build.artifacts.size() == 1);
  CHECK(build.artifacts[0].url ==
        std::string(kFiles) + "nvidia_cudnn_cu13-9.26.0.51-py3-none-manylinux_2_27_x86_64.whl");
  CHECK(build.artifacts[0].wheel_root == "nvidia/cudnn");
}

TEST_CASE("a toolkit release without a runtime wheel is left out, saying why", "[pypi-cuda]") {
  FakeIndex index = nvidia_index();
  index.pages.erase(fake_index_url("nvidia-cuda-runtime/"));
  auto imported = import_pypi_cuda_releases(
      known_cuda(), known_cudnn(), {.index_url = fake_index_url(), .fetch = index.fetcher()});
  REQUIRE(imported);
  CHECK(imported->cuda.versions.empty());
  REQUIRE(imported->problems.size() == 1);
  CHECK_THAT(imported->problems[0], Contains("cuda 13.2.2") && Contains("cuda_cudart"));
}
