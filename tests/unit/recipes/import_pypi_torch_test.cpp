#include "envkit/recipes/import_pypi_torch.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <string>
#include <vector>

#include "envkit/recipes/database.hpp"
#include "envkit/sys/fs.hpp"
#include "recipes_test_support.hpp"
#include "support/spec_literals.hpp"
#include "support/temp_dir.hpp"

using namespace envkit::recipes;
using envkit::Result;
namespace specs = envkit::specs;

using envkit::test::spec;
using envkit::test::v;

namespace {

using envkit::test::build_of;
using envkit::test::fake_index_url;
using envkit::test::FakeIndex;
using envkit::test::versions_of;
std::string torch_fixture(std::string_view name) {
  return envkit::test::recipes_fixture("pypi-torch", name);
}

constexpr std::string_view kFiles = "https://files.example.test/";

// The torch page (HTML, as pypi.org answers) and two metadata files; 404 for the rest.
FakeIndex torch_index() {
  FakeIndex index;
  index.add("torch", "text/html", torch_fixture("torch.html"));
  for (const std::string patch : {"2.1.0", "2.1.2"}) {
    index.add_url(
        std::string(kFiles) + "torch-" + patch + "-cp311-cp311-manylinux1_x86_64.whl.metadata",
        "text/html", torch_fixture("torch-" + patch + ".metadata"));
  }
  return index;
}

Build build(std::string id, std::string cuda, std::string cudnn, std::string tested_cudnn) {
  Build b{.id = std::move(id)};
  b.requires_ = {{"cuda", spec(cuda)}, {"cudnn", spec(cudnn)}, {"python", spec(">=3.8,<3.12")}};
  b.tested = {{"cuda", b.id == "cu118" ? "11.8" : "12.1"}, {"cudnn", std::move(tested_cudnn)}};
  b.platforms = {specs::Platform::linux_x86_64};
  return b;
}

// torch as the tables give it: 2.0.1 by patch, 2.1 and 2.2 by minor.
Recipe torch_tables() {
  const std::vector<Build> builds = {build("cu118", ">=11.8,<12", ">=8.7,<9", "8.7.0.84"),
                                     build("cu121", ">=12.1,<13", ">=8.7,<9", "8.9.2.26")};
  Recipe torch{.name = "torch", .sources = {"tables"}};
  for (auto version : {"2.0.1", "2.1", "2.2"})
    torch.versions.push_back(RecipeVersion{.version = v(version), .builds = builds});
  return torch;
}

PypiTorchImport imported(FakeIndex& index) {
  auto result =
      import_pypi_torch(torch_tables(), {.index_url = fake_index_url(), .fetch = index.fetcher()});
  REQUIRE(result);
  return *std::move(result);
}

}  // namespace

TEST_CASE("torch wheel pins are read from Requires-Dist, markers ignored", "[pypi-torch]") {
  const auto pins = parse_torch_wheel_pins(torch_fixture("torch-2.1.0.metadata"));
  CHECK(pins.cuda_runtime == "12.1.105");
  CHECK(pins.cudnn == "8.9.2.26");  // not the line in the description
  CHECK(pins.cublas == "12.1.3.1");

  const auto newer = parse_torch_wheel_pins(torch_fixture("torch-2.1.2.metadata"));
  CHECK(newer.cuda_runtime == "12.1.105");  // nvidia_cuda_runtime_cu12 normalized
  CHECK(newer.cudnn == "8.9.2.26");
  CHECK_FALSE(newer.cublas);  // >=12.1 is no pin

  // CUDA 13 wheels drop the -cuNN suffix.
  const auto cu13 = parse_torch_wheel_pins(
      "Name: torch\nRequires-Dist: nvidia-cuda-runtime==13.0.96; platform_system == \"Linux\"\n"
      "Requires-Dist: nvidia-cublas==13.0.0.19; extra == \"x\"\n"
      "Requires-Dist: nvidia-cuda-runtime-cu12-extra==1.0\n");
  CHECK(cu13.cuda_runtime == "13.0.96");
  CHECK(cu13.cublas == "13.0.0.19");
  CHECK_FALSE(cu13.cudnn);

  // torch 2.13 pins NVIDIA's toolkit meta-package with the runtime as an extra.
  const auto toolkit = parse_torch_wheel_pins(
      "Requires-Dist: cuda-toolkit[cublas,cudart,nvrtc]==13.0.3; platform_system == \"Linux\"\n"
      "Requires-Dist: cuda-bindings<14,>=13.0.3; platform_system == \"Linux\"\n"
      "Requires-Dist: nvidia-cudnn-cu13==9.20.0.48; platform_system == \"Linux\"\n");
  CHECK(toolkit.cuda_runtime == "13.0.3");
  CHECK(toolkit.cudnn == "9.20.0.48");
  CHECK_FALSE(toolkit.cublas);
  CHECK_FALSE(parse_torch_wheel_pins("Requires-Dist: cuda-toolkit[nvrtc]==13.0.3\n").cuda_runtime);
}

TEST_CASE("a CUDA runtime version names the torch build", "[pypi-torch]") {
  CHECK(cuda_build_id("12.1.105") == "cu121");
  CHECK(cuda_build_id("11.8.89") == "cu118");
  CHECK(cuda_build_id("13.0.96") == "cu130");
  CHECK_FALSE(cuda_build_id("12"));
  CHECK_FALSE(cuda_build_id("not a version"));
}

TEST_CASE("minor-keyed torch versions are refined into PyPI's patch releases", "[pypi-torch]") {
  FakeIndex index = torch_index();
  const auto result = imported(index);

  // 2.1.3 is yanked, 2.2.0rc1 a pre-release, 2.0.1 not minor-keyed: only 2.1 is refined.
  CHECK(versions_of(result.torch) == std::vector<std::string>{"2.1.0", "2.1.1", "2.1.2"});
  CHECK(result.torch.replaces == std::vector<std::string>{"2.1"});
  // One page and one metadata file per patch: advertised metadata first, then the newest
  // CPython; 2.1.1 advertises none and the index serves none (404).
  const auto wheel = [](std::string_view name) {
    return std::string(kFiles) + "torch-" + std::string(name) + "-manylinux1_x86_64.whl.metadata";
  };
  // 2.1.1's wheel is then asked for its METADATA itself (its last 64 KiB): not there either.
  const auto whole = [](std::string_view name) {
    return std::string(kFiles) + "torch-" + std::string(name) + "-manylinux1_x86_64.whl";
  };
  CHECK(index.asked ==
        std::vector<std::string>{fake_index_url("torch/"), wheel("2.1.0-cp311-cp311"),
                                 wheel("2.1.1-cp311-cp311"), whole("2.1.1-cp311-cp311"),
                                 wheel("2.1.2-cp311-cp311")});
  CHECK(result.metadata_fetched == 3);

  REQUIRE(result.patches.size() == 3);
  CHECK(result.patches[0].wheel == "torch-2.1.0-cp311-cp311-manylinux1_x86_64.whl");
  CHECK(result.patches[0].metadata_read);
  CHECK(result.patches[0].build_id == "cu121");
  CHECK(result.patches[1].wheel == "torch-2.1.1-cp311-cp311-manylinux1_x86_64.whl");
  CHECK_FALSE(result.patches[1].metadata_read);
  CHECK_FALSE(result.patches[1].build_id);
  CHECK(result.patches[2].pins.cudnn == "8.9.2.26");

  const Build& pinned = build_of(result.torch, "2.1.2", "cu121");
  CHECK(pinned.tested ==
        std::map<std::string, std::string>{{"cuda", "12.1.105"}, {"cudnn", "8.9.2.26"}});
  CHECK(pinned.requires_.at("cudnn").to_string() == spec(">=8.9,<9").to_string());
  CHECK(pinned.requires_.at("cuda").to_string() == spec(">=12.1,<13").to_string());
  // The other build is a copy of the minor's.
  CHECK(build_of(result.torch, "2.1.2", "cu118").tested.at("cuda") == "11.8");
  CHECK(build_of(result.torch, "2.1.2", "cu118").requires_.at("cudnn").to_string() ==
        spec(">=8.7,<9").to_string());
  // 2.1.1 has no metadata: copied builds, and a note says so.
  CHECK(build_of(result.torch, "2.1.1", "cu121").tested.at("cuda") == "12.1");
  CHECK(std::any_of(result.torch.sources.begin(), result.torch.sources.end(),
                    [](const std::string& s) { return s.starts_with("torch 2.1.1: "); }));
}

TEST_CASE("torch before 1.12 gets the Python range of its wheels", "[pypi-torch]") {
  // The tables give torch 1.9.1 no Python range: any Python went, 3.14 included.
  Recipe tables{.name = "torch", .sources = {"tables"}};
  tables.versions.push_back(RecipeVersion{.version = v("1.9.1")});
  for (const std::string id : {"cu102", "cu111"}) {
    tables.versions[0].builds.push_back(Build{.id = id,
                                              .requires_ = {{"cuda", spec(">=10.2")}},
                                              .platforms = {specs::Platform::linux_x86_64}});
  }
  FakeIndex index;
  index.add("torch", "application/vnd.pypi.simple.v1+json",
            envkit::test::json_page({"torch-1.9.1-cp36-cp36m-manylinux1_x86_64.whl",
                                     "torch-1.9.1-cp39-cp39-manylinux1_x86_64.whl",
                                     "torch-1.9.1-cp39-cp39-win_amd64.whl",
                                     "torch-1.9.1-cp310-cp310-manylinux1_x86_64.whl"},
                                    {"torch-1.9.1-cp310-cp310-manylinux1_x86_64.whl"}));
  auto imported =
      import_pypi_torch(tables, {.index_url = fake_index_url(), .fetch = index.fetcher()});
  REQUIRE(imported.ok());
  CHECK(imported->python_ranges == 1);
  for (const std::string id : {"cu102", "cu111"}) {
    CHECK(build_of(imported->torch, "1.9.1", id).requires_.at("python").to_string() ==
          spec(">=3.6,<3.10").to_string());  // the yanked cp310 wheel does not count
  }
  // Merged over the tables, the range joins the CUDA requirement.
  merge_into(tables, imported->torch);
  CHECK(build_of(tables, "1.9.1", "cu111").requires_.size() == 2);
  CHECK(build_of(tables, "1.9.1", "cu111").platforms == std::vector{specs::Platform::linux_x86_64});
}

TEST_CASE("merging an overlay drops the versions it replaces", "[pypi-torch]") {
  FakeIndex index = torch_index();
  Recipe merged = torch_tables();
  merge_into(merged, imported(index).torch);
  CHECK(versions_of(merged) == std::vector<std::string>{"2.0.1", "2.1.0", "2.1.1", "2.1.2", "2.2"});
  CHECK(merged.replaces.empty());
}

TEST_CASE("the torch overlay round-trips through the database", "[pypi-torch]") {
  FakeIndex index = torch_index();
  envkit::test::TempDir dir;
  REQUIRE(write_recipe(dir.path(), torch_tables(), ArtifactSet::offline));
  const auto overlay = imported(index).torch;
  REQUIRE(write_facts_overlay(dir.path(), overlay));

  const auto text = envkit::sys::read_file(dir.path() / "pypi" / "torch.yaml");
  REQUIRE(text);
  CHECK(text->find("replaces: [\"2.1\"]\n") != std::string::npos);
  auto reread = read_facts(*text, "torch.yaml");
  REQUIRE(reread);
  CHECK(reread->replaces == overlay.replaces);
  CHECK(write_facts(*reread) == *text);

  auto db = Database::open(dir.path());
  REQUIRE(db);
  CHECK(db->names() == std::vector<std::string>{"torch"});
  auto facts = db->facts("torch");
  REQUIRE(facts);
  CHECK(versions_of(**facts) ==
        std::vector<std::string>{"2.0.1", "2.1.0", "2.1.1", "2.1.2", "2.2"});
  CHECK(build_of(**facts, "2.1.2", "cu121").tested.at("cudnn") == "8.9.2.26");
  auto full = db->load_full("torch");
  REQUIRE(full);
  CHECK_FALSE(full->find(v("2.1.0"))->builds.empty());
}

namespace {

// What PyPI's torch 2.15.0 METADATA pins (read from
// torch-2.15.0-cp312-cp312-manylinux_2_28_x86_64.whl on 2026-11-29): CUDA 13.2 through NVIDIA's
// toolkit meta-package, cuDNN 9.26.
std::string metadata_of(std::string_view version, std::string_view toolkit, std::string_view cudnn,
                        std::string_view requires_python = ">=3.11") {
  return "Metadata-Version: 2.4\nName: torch\nVersion: " + std::string(version) +
         "\nRequires-Python: " + std::string(requires_python) +
         "\nRequires-Dist: filelock\n"
         "Requires-Dist: cuda-toolkit[cublas,cudart,cufft]==" +
         std::string(toolkit) +
         "; platform_system == \"Linux\"\n"
         "Requires-Dist: nvidia-cudnn-cu13==" +
         std::string(cudnn) + "; platform_system == \"Linux\"\n\nThe description.\n";
}

// torch's page with 2.14.1 and 2.15.0 (cp311 … cp315 and cp314t, x86_64 and aarch64, a
// CPU-only win_amd64 wheel), each wheel's metadata served beside it (PEP 658).
FakeIndex newer_index(std::string_view aarch64_toolkit = "13.2.2") {
  std::vector<std::string> wheels;
  for (const std::string version : {"2.14.1", "2.15.0"}) {
    for (const std::string tag : {"cp311-cp311", "cp312-cp312", "cp314-cp314t", "cp315-cp315"}) {
      for (const std::string platform :
           {"manylinux_2_28_x86_64", "manylinux_2_28_aarch64", "win_amd64"})
        wheels.push_back("torch-" + version + "-" + tag + "-" + platform + ".whl");
    }
  }
  FakeIndex index;
  index.add("torch", "application/vnd.pypi.simple.v1+json", envkit::test::json_page(wheels));
  for (const auto& name : wheels) {
    const bool newest = name.starts_with("torch-2.15.0");
    const bool arm = name.find("aarch64") != std::string::npos;
    index.add_url(std::string(kFiles) + name + ".metadata", "text/plain",
                  metadata_of(newest ? "2.15.0" : "2.14.1",
                              newest ? (arm ? aarch64_toolkit : "13.2.2") : "13.0.3.0",
                              newest ? "9.26.0.51" : "9.24.0.43"));
  }
  return index;
}

// The tables as they stood: 2.14 keyed by minor, with the cu126 builds only.
Recipe tables_up_to_2_14() {
  Recipe torch{.name = "torch", .sources = {"tables"}};
  Build cu126{.id = "cu126",
              .requires_ = {{"cuda", spec(">=12.6,<13")}, {"python", spec(">=3.10,<3.15")}},
              .tested = {{"cuda", "12.6"}},
              .platforms = {specs::Platform::linux_x86_64, specs::Platform::windows_x86_64}};
  torch.versions.push_back(RecipeVersion{.version = v("2.14"), .builds = {cu126}});
  return torch;
}

}  // namespace

TEST_CASE("a torch release newer than the tables gets a build from its wheels' pins",
          "[pypi-torch]") {
  FakeIndex index = newer_index();
  auto result = import_pypi_torch(tables_up_to_2_14(),
                                  {.index_url = fake_index_url(), .fetch = index.fetcher()});
  REQUIRE(result);
  CHECK(versions_of(result->torch) == std::vector<std::string>{"2.14.1", "2.15.0"});
  const Build& newest = build_of(result->torch, "2.15.0", "cu132");
  CHECK(newest.requires_.at("cuda").to_string() == spec(">=13.2,<14").to_string());
  CHECK(newest.requires_.at("cudnn").to_string() == spec(">=9.26,<10").to_string());
  // Requires-Python within the CPython tags (cp314t is not a CPython 3 minor of its own).
  CHECK(newest.requires_.at("python").to_string() == spec(">=3.11,<3.16").to_string());
  CHECK(newest.tested ==
        std::map<std::string, std::string>{{"cuda", "13.2.2"}, {"cudnn", "9.26.0.51"}});
  // PyPI's Windows wheels are CPU-only: no CUDA build there.
  CHECK(newest.platforms ==
        std::vector{specs::Platform::linux_x86_64, specs::Platform::linux_aarch64});
  CHECK(newest.min_glibc.at(specs::Platform::linux_x86_64).original() == "2.28");
  CHECK(newest.wheel_index == kPypiIndex);
  CHECK(result->torch.find(v("2.15.0"))->builds.size() == 1);

  // 2.14.1: the tables' cu126 build is copied, and PyPI's CUDA 13.0 build added beside it.
  CHECK(build_of(result->torch, "2.14.1", "cu126").wheel_index.empty());
  const Build& pypi = build_of(result->torch, "2.14.1", "cu130");
  CHECK(pypi.wheel_index == kPypiIndex);
  CHECK(pypi.requires_.at("cuda").to_string() == spec(">=13.0,<14").to_string());
  REQUIRE(result->patches.size() == 2);
  CHECK(result->patches[0].from_wheels);
  CHECK(result->problems.empty());
}

TEST_CASE("releases the database already read are left alone", "[pypi-torch]") {
  FakeIndex index = newer_index();
  PypiImportOptions options{.index_url = fake_index_url(), .fetch = index.fetcher()};
  options.known_release = [](std::string_view project, const specs::Version& release) {
    return project == "torch" && release == v("2.14.1");
  };
  auto result = import_pypi_torch(tables_up_to_2_14(), options);
  REQUIRE(result);
  CHECK(versions_of(result->torch) == std::vector<std::string>{"2.15.0"});
  CHECK(std::none_of(index.asked.begin(), index.asked.end(), [](const std::string& url) {
    return url.find("torch-2.14.1") != std::string::npos;
  }));
}

TEST_CASE("a release whose wheels pin two CUDA majors keeps the platform that agrees",
          "[pypi-torch]") {
  FakeIndex index = newer_index("12.9.1");
  auto result = import_pypi_torch(tables_up_to_2_14(),
                                  {.index_url = fake_index_url(), .fetch = index.fetcher()});
  REQUIRE(result);
  CHECK(build_of(result->torch, "2.15.0", "cu132").platforms ==
        std::vector{specs::Platform::linux_x86_64});
  REQUIRE(result->problems.size() == 1);
  CHECK_THAT(result->problems[0], Catch::Matchers::Contains("torch 2.15.0") &&
                                      Catch::Matchers::Contains("two CUDA majors") &&
                                      Catch::Matchers::Contains("13.2.2") &&
                                      Catch::Matchers::Contains("12.9.1"));
}

TEST_CASE("a wheel whose METADATA names another version is left out, naming it", "[pypi-torch]") {
  FakeIndex index = newer_index();
  const std::string url =
      std::string(kFiles) + "torch-2.15.0-cp315-cp315-manylinux_2_28_x86_64.whl.metadata";
  index.add_url(url, "text/plain", metadata_of("2.16.0", "13.2.2", "9.26.0.51"));
  auto result = import_pypi_torch(tables_up_to_2_14(),
                                  {.index_url = fake_index_url(), .fetch = index.fetcher()});
  REQUIRE(result);
  CHECK(result->torch.find(v("2.15.0")) == nullptr);
  REQUIRE(result->problems.size() == 1);
  CHECK_THAT(result->problems[0],
             Catch::Matchers::Contains("torch-2.15.0-cp315-cp315-manylinux_2_28_x86_64.whl") &&
                 Catch::Matchers::Contains("`2.16.0`"));
}

TEST_CASE("a build the tables list for Windows is PyPI's there only if that wheel pins it",
          "[pypi-torch]") {
  Recipe tables{.name = "torch", .sources = {"tables"}};
  Build cu130{.id = "cu130",
              .requires_ = {{"cuda", spec(">=13.0,<14")}},
              .tested = {{"cuda", "13.0"}},
              .platforms = {specs::Platform::linux_x86_64, specs::Platform::windows_x86_64}};
  tables.versions.push_back(RecipeVersion{.version = v("2.14"), .builds = {cu130}});
  FakeIndex index = newer_index();
  // PyPI's Windows wheels are CPU builds: their METADATA is the Linux wheels', whose NVIDIA
  // pins all say `platform_system == "Linux"` (as torch 2.12.1's win_amd64 wheel does).
  CHECK_FALSE(parse_torch_wheel_pins(metadata_of("2.14.1", "13.0.3.0", "9.24.0.43"),
                                     specs::Platform::windows_x86_64)
                  .cuda_runtime);
  auto result =
      import_pypi_torch(tables, {.index_url = fake_index_url(), .fetch = index.fetcher()});
  REQUIRE(result);
  const Build& linux = build_of(result->torch, "2.14.1", "cu130");
  CHECK(linux.platforms == std::vector{specs::Platform::linux_x86_64});
  CHECK(linux.wheel_index == kPypiIndex);
  CHECK(linux.tested.at("cuda") == "13.0.3.0");
  // Windows keeps the tables' facts, as a build PyPI does not serve.
  const Build& windows = build_of(result->torch, "2.14.1", "cu130-windows");
  CHECK(windows.platforms == std::vector{specs::Platform::windows_x86_64});
  CHECK(windows.wheel_index.empty());
  CHECK(windows.tested.at("cuda") == "13.0");
}

TEST_CASE("a Requires-Python no CPython of the wheels meets leaves the release out, naming it",
          "[pypi-torch]") {
  FakeIndex index = newer_index();
  for (const std::string tag : {"cp311-cp311", "cp312-cp312", "cp314-cp314t", "cp315-cp315"}) {
    index.add_url(
        std::string(kFiles) + "torch-2.15.0-" + tag + "-manylinux_2_28_x86_64.whl.metadata",
        "text/plain", metadata_of("2.15.0", "13.2.2", "9.26.0.51", ">=3.99"));
  }
  auto result = import_pypi_torch(tables_up_to_2_14(),
                                  {.index_url = fake_index_url(), .fetch = index.fetcher()});
  REQUIRE(result);
  CHECK(result->torch.find(v("2.15.0")) == nullptr);
  REQUIRE(result->problems.size() == 1);
  CHECK_THAT(result->problems[0], Catch::Matchers::Contains("torch 2.15.0") &&
                                      Catch::Matchers::Contains("`>=3.99`") &&
                                      Catch::Matchers::Contains("(3.11, 3.12, 3.14, 3.15)"));
}
