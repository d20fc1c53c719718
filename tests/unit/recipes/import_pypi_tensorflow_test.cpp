#include "envkit/recipes/import_pypi_tensorflow.hpp"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "recipes_test_support.hpp"
#include "support/spec_literals.hpp"

using namespace envkit::recipes;
namespace specs = envkit::specs;

using envkit::test::spec;
using envkit::test::v;

namespace {

using envkit::test::build_of;
using envkit::test::fake_index_url;
using envkit::test::FakeIndex;
using envkit::test::versions_of;
using specs::Platform;

Build tf_build(std::string id, std::string cuda, std::string python, std::vector<Platform> on) {
  Build b{.id = std::move(id)};
  b.requires_ = {{"cuda", spec(cuda)}, {"cudnn", spec(">=8.1,<9")}, {"python", spec(python)}};
  b.tested = {{"cuda", b.id.substr(4)}, {"cudnn", "8.1"}};  // cuda11.2 -> 11.2
  b.platforms = std::move(on);
  return b;
}

// The tables: tensorflow's Linux rows, tensorflow-gpu's Windows rows for 2.x.
Recipe tensorflow_tables() {
  Recipe tf{.name = "tensorflow", .sources = {"tables"}};
  tf.versions.push_back(RecipeVersion{
      .version = v("2.10.0"),
      .builds = {tf_build("cuda11.2", ">=11.2,<12", ">=3.7,<3.11", {Platform::linux_x86_64})}});
  tf.versions.push_back(RecipeVersion{
      .version = v("2.12.0"),
      .builds = {tf_build("cuda11.8", ">=11.8,<12", ">=3.8,<3.12", {Platform::linux_x86_64})}});
  return tf;
}

Recipe tensorflow_gpu_tables() {
  Recipe gpu{.name = "tensorflow-gpu", .sources = {"tables"}};
  gpu.versions.push_back(RecipeVersion{
      .version = v("2.10.0"),
      .builds = {tf_build("cuda11.2", ">=11.2,<12", ">=3.7,<3.11", {Platform::windows_x86_64})}});
  return gpu;
}

FakeIndex tensorflow_index() {
  FakeIndex index;
  index.add("tensorflow", "application/vnd.pypi.simple.v1+json",
            envkit::test::json_page(
                {
                    "tensorflow-2.10.0-cp310-cp310-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
                    "tensorflow-2.10.0-cp37-cp37m-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
                    "tensorflow-2.12.0-cp38-cp38-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
                    "tensorflow-2.12.1-cp38-cp38-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
                    "tensorflow-2.12.1-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
                    "tensorflow-2.12.1-cp311-cp311-win_amd64.whl",  // no GPU row on Windows
                    "tensorflow-2.13.0rc0-cp311-cp311-manylinux_2_17_x86_64.whl",
                    "tensorflow-2.12.2-cp311-cp311-manylinux_2_17_x86_64.whl",
                    "tensorflow-2.11.0-cp310-cp310-manylinux_2_17_x86_64.whl",  // no row for 2.11
                },
                {"tensorflow-2.12.2-cp311-cp311-manylinux_2_17_x86_64.whl"}));
  index.add("tensorflow-gpu", "application/vnd.pypi.simple.v1+json",
            envkit::test::json_page({
                "tensorflow_gpu-2.10.0-cp39-cp39-manylinux2010_x86_64.whl",
                "tensorflow_gpu-2.10.0-cp310-cp310-manylinux2014_x86_64.whl",
                "tensorflow_gpu-2.10.0-cp310-cp310-win_amd64.whl",
                "tensorflow_gpu-2.10.1-cp310-cp310-manylinux2014_x86_64.whl",
            }));
  return index;
}

}  // namespace

TEST_CASE("every tensorflow release on the index gets its minor's tested builds",
          "[recipes][pypi]") {
  auto index = tensorflow_index();
  auto imported = import_pypi_tensorflow(tensorflow_tables(), tensorflow_gpu_tables(),
                                         {.index_url = fake_index_url(), .fetch = index.fetcher()});
  REQUIRE(imported.ok());
  const auto& tf = imported->tensorflow;

  // 2.12.1, missing from the tables, is there; pre-releases, yanked releases and minors
  // without a GPU row are not.
  CHECK(versions_of(tf) == std::vector<std::string>{"2.10.0", "2.12.0", "2.12.1"});
  const auto& patch = build_of(tf, "2.12.1", "cuda11.8");
  CHECK(patch.requires_.at("cuda").to_string() == spec(">=11.8,<12").to_string());
  CHECK(patch.tested.at("cuda") == "11.8");
  // Its Python range is the CPython tags of its wheels; its glibc their manylinux tag.
  CHECK(patch.requires_.at("python").to_string() == spec(">=3.8,<3.12").to_string());
  CHECK(patch.min_glibc.at(Platform::linux_x86_64) == v("2.17"));
  // The Windows wheel has no GPU build in the tables: the platform is not added.
  CHECK(patch.platforms == std::vector{Platform::linux_x86_64});
  CHECK(std::find(imported->added.begin(), imported->added.end(),
                  "tensorflow 2.12.1: builds of 2.12.0") != imported->added.end());
}

TEST_CASE("tensorflow-gpu 2.x installs on Linux with tensorflow's Linux configuration",
          "[recipes][pypi]") {
  auto index = tensorflow_index();
  auto imported = import_pypi_tensorflow(tensorflow_tables(), tensorflow_gpu_tables(),
                                         {.index_url = fake_index_url(), .fetch = index.fetcher()});
  REQUIRE(imported.ok());
  const auto& gpu = imported->tensorflow_gpu;
  CHECK(versions_of(gpu) == std::vector<std::string>{"2.10.0", "2.10.1"});
  // The Linux build needs what the Windows build of the same id needs: one build, both platforms.
  const auto& both = build_of(gpu, "2.10.0", "cuda11.2");
  CHECK(both.platforms == std::vector{Platform::linux_x86_64, Platform::windows_x86_64});
  CHECK(both.min_glibc.at(Platform::linux_x86_64) == v("2.12"));  // manylinux2010, the lowest
  CHECK(both.requires_.at("python").to_string() == spec(">=3.9,<3.11").to_string());
  // 2.10.1 has only Linux wheels, and no row of its own.
  CHECK(build_of(gpu, "2.10.1", "cuda11.2").platforms == std::vector{Platform::linux_x86_64});
}

TEST_CASE("the CPython range of a release's wheels", "[recipes][pypi]") {
  const auto range = [](std::vector<std::string> names) {
    std::vector<WheelFilename> wheels;
    for (const auto& name : names)
      wheels.push_back(parse_wheel_filename(name).value());
    const auto spec = cpython_range(wheels);
    return spec ? spec->to_string() : std::string("none");
  };
  CHECK(range({"torch-1.9.1-cp36-cp36m-manylinux1_x86_64.whl",
               "torch-1.9.1-cp39-cp39-manylinux1_x86_64.whl",
               "torch-1.9.1-cp37-cp37m-win_amd64.whl"}) == spec(">=3.6,<3.10").to_string());
  // Python 2 tags are not a Python 3 range; abi3 leaves it open above.
  CHECK(range({"tensorflow_gpu-1.15.0-cp27-cp27mu-manylinux2010_x86_64.whl",
               "tensorflow_gpu-1.15.0-cp35-cp35m-manylinux2010_x86_64.whl"}) ==
        spec(">=3.5,<3.6").to_string());
  CHECK(range({"jaxlib-0.1-cp37-abi3-manylinux2014_x86_64.whl"}) == spec(">=3.7").to_string());
  CHECK(range({"nvidia_cudnn_cu12-9.1.0.70-py3-none-manylinux2014_x86_64.whl"}) == "none");
}
