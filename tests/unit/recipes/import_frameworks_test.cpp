#include "envkit/recipes/import_frameworks.hpp"

#include <catch2/catch.hpp>
#include <filesystem>

#include "envkit/sys/fs.hpp"
#include "recipes_test_support.hpp"
#include "support/envkit_runner.hpp"
#include "support/skip.hpp"

namespace fs = std::filesystem;
using envkit::recipes::Build;
using envkit::recipes::cuda_series_spec;
using envkit::recipes::cudnn_series_spec;
using envkit::recipes::import_tensorflow;
using envkit::recipes::import_torch;
using envkit::recipes::parse_python_range;
using envkit::recipes::Recipe;
using envkit::recipes::TensorflowRecipes;
using envkit::specs::ComputeCapability;
using envkit::specs::Platform;
using envkit::specs::Version;
using envkit::specs::VersionSpec;

namespace {

using envkit::test::build_of;

std::string other_fixture(std::string_view name) {
  return envkit::test::recipes_fixture("other", name);
}

// The normalized form of `spec`, so tests can write clauses in any order.
std::string normalized(std::string_view spec) {
  return VersionSpec::parse(spec).value().to_string();
}

std::string python_range(std::string_view text) {
  auto spec = parse_python_range(text);
  INFO(text << (spec.ok() ? "" : ": " + spec.error().to_string()));
  REQUIRE(spec);
  return spec->to_string();
}

std::vector<std::string> build_ids(const Recipe& recipe, std::string_view version) {
  std::vector<std::string> ids;
  for (const auto& build : recipe.find(Version::parse(version).value())->builds) {
    ids.push_back(build.id);
  }
  return ids;
}

std::string requirement(const Build& build, const std::string& package) {
  const auto it = build.requires_.find(package);
  return it == build.requires_.end() ? "<absent>" : it->second.to_string();
}

std::vector<ComputeCapability> archs(std::initializer_list<const char*> texts) {
  std::vector<ComputeCapability> parsed;
  for (const auto* text : texts)
    parsed.push_back(ComputeCapability::parse(text).value());
  return parsed;
}

Recipe torch_from(std::string_view matrix_file) {
  const auto matrix = other_fixture(matrix_file);
  const auto previous = other_fixture("torch_previous_versions.csv");
  const auto arch = other_fixture("torch_arch_matrix.csv");
  auto recipe = import_torch({.release_matrix = {matrix, "matrix.csv"},
                              .previous_versions = {previous, "previous.csv"},
                              .arch_matrix = {arch, "arch.csv"}});
  INFO((recipe.ok() ? "" : recipe.error().to_string()));
  REQUIRE(recipe);
  return *recipe;
}

TensorflowRecipes tensorflow_fixture() {
  const auto linux_gpu = other_fixture("tensorflow_linux_gpu.csv");
  const auto windows_gpu = other_fixture("tensorflow_windows_gpu.csv");
  auto recipes = import_tensorflow(
      {.linux_gpu = {linux_gpu, "linux.csv"}, .windows_gpu = {windows_gpu, "windows.csv"}});
  INFO((recipes.ok() ? "" : recipes.error().to_string()));
  REQUIRE(recipes);
  return *recipes;
}

}  // namespace

TEST_CASE("series rule: same major from CUDA 11 on, exact major.minor before",
          "[other][frameworks]") {
  const auto cuda = [](std::string_view v) {
    return cuda_series_spec(Version::parse(v).value()).to_string();
  };
  const auto cudnn = [](std::string_view v) {
    return cudnn_series_spec(Version::parse(v).value()).to_string();
  };
  CHECK(cuda("11.8") == normalized(">=11.8,<12"));
  CHECK(cuda("12.6") == normalized(">=12.6,<13"));
  CHECK(cuda("13.0") == normalized(">=13.0,<14"));
  CHECK(cuda("10.2") == "==10.2.*");
  CHECK(cuda("9") == "==9.0.*");
  CHECK(cudnn("8.7.0.84") == normalized(">=8.7,<9"));
  CHECK(cudnn("8.1") == normalized(">=8.1,<9"));
  CHECK(cudnn("7") == normalized(">=7,<8"));
  const auto from_118 = cuda_series_spec(Version::parse("11.8").value());
  CHECK(from_118.contains(Version::parse("11.8.89").value()));
  CHECK_FALSE(from_118.contains(Version::parse("11.7.1").value()));
  CHECK_FALSE(from_118.contains(Version::parse("12.0").value()));
  CHECK(cuda_series_spec(Version::parse("9").value()).contains(Version::parse("9.0.176").value()));
}

TEST_CASE("python ranges as the framework tables write them", "[other][frameworks]") {
  CHECK(python_range(">=3.8, <=3.11") == normalized(">=3.8,<3.12"));
  CHECK(python_range(">=3.8, <=3.11, (3.12 experimental)") == normalized(">=3.8,<3.12"));
  CHECK(python_range(">=3.9, <=3.13, (3.13t experimental)") == normalized(">=3.9,<3.14"));
  // The parenthesized upper end is experimental itself: 3.14 is not included.
  CHECK(python_range(">=3.10, <=(3.14, 3.14t experimental)") == normalized(">=3.10,<3.14"));
  CHECK(python_range("3.7-3.10") == normalized(">=3.7,<3.11"));
  CHECK(python_range("2.7, 3.3-3.6") == normalized(">=3.3,<3.7"));
  CHECK(python_range("3.5") == normalized(">=3.5,<3.6"));
  CHECK(python_range("<= 3.8") == "<3.9");

  auto python2_only = parse_python_range("2.7");
  REQUIRE_FALSE(python2_only);
  CHECK(python2_only.error().message() == "the Python range `2.7` names no Python 3 version");
  auto prose = parse_python_range("3.7 to 3.10");
  REQUIRE_FALSE(prose);
  CHECK(prose.error().causes() ==
        std::vector<std::string>{"`3.7 to 3.10` is not a Python major.minor"});
}

TEST_CASE("torch: patch versions from the previous-versions page, minors from the matrix",
          "[other][frameworks]") {
  const auto torch = torch_from("torch_release_matrix.csv");
  CHECK(torch.name == "torch");
  std::vector<std::string> versions;
  for (const auto& v : torch.versions)
    versions.push_back(v.version.original());
  // The matrix row 2.0 is laid onto 2.0.0 and 2.0.1 rather than keyed by itself.
  CHECK(versions ==
        std::vector<std::string>{"1.7.1", "1.8.2", "2.0.0", "2.0.1", "2.5", "2.6", "2.12"});

  const auto& cu117 = build_of(torch, "2.0.1", "cu117");
  CHECK(requirement(cu117, "cuda") == normalized(">=11.7,<12"));
  CHECK(requirement(cu117, "cudnn") == normalized(">=8.5,<9"));
  CHECK(requirement(cu117, "python") == normalized(">=3.8,<3.12"));
  CHECK(cu117.tested ==
        std::map<std::string, std::string>{{"cuda", "11.7"}, {"cudnn", "8.5.0.96"}});
  CHECK(cu117.platforms == std::vector<Platform>{Platform::linux_x86_64, Platform::windows_x86_64});
  // The experimental CUDA of a release is a build too.
  CHECK(build_of(torch, "2.0.1", "cu118").tested.at("cudnn") == "8.7.0.84");
}

TEST_CASE("torch: CUDA before 11 needs its exact minor, old releases have no Python range",
          "[other][frameworks]") {
  const auto torch = torch_from("torch_release_matrix.csv");
  CHECK(build_ids(torch, "1.7.1") == std::vector<std::string>{"cu101", "cu102", "cu110", "cu92"});
  const auto& cu92 = build_of(torch, "1.7.1", "cu92");
  CHECK(requirement(cu92, "cuda") == "==9.2.*");
  CHECK(requirement(cu92, "cudnn") == "<absent>");
  CHECK(requirement(cu92, "python") == "<absent>");
  CHECK(requirement(build_of(torch, "1.7.1", "cu110"), "cuda") == normalized(">=11.0,<12"));
  // The LTS row's note "Python <= 3.8 only".
  CHECK(requirement(build_of(torch, "1.8.2", "cu111"), "python") == "<3.9");
}

TEST_CASE("torch: cuDNN items bind to their CUDA or to the whole cell", "[other][frameworks]") {
  const auto torch = torch_from("torch_release_matrix.csv");
  for (const auto* id : {"cu118", "cu121", "cu124"}) {
    INFO(id);
    CHECK(build_of(torch, "2.5", id).tested.at("cudnn") == "9.1.0.70");
  }
  CHECK(requirement(build_of(torch, "2.5", "cu118"), "python") == normalized(">=3.9,<3.13"));
  // "CUDA 11.8, CUDA 12.4 (CUDNN 9.1.0.70)": the cuDNN belongs to 12.4 only.
  CHECK(requirement(build_of(torch, "2.6", "cu118"), "cudnn") == "<absent>");
  CHECK(build_of(torch, "2.6", "cu124").tested.at("cudnn") == "9.1.0.70");
  CHECK(build_of(torch, "2.6", "cu126").tested.at("cudnn") == "9.5.1.17");
  // No arch-matrix row covers 2.6 (the plan row is not a release): Linux only, no arch list.
  CHECK(build_of(torch, "2.6", "cu126").platforms == std::vector<Platform>{Platform::linux_x86_64});
  CHECK(build_of(torch, "2.6", "cu126").cuda_arch.empty());
}

TEST_CASE("torch: arch lists and platforms from the CUDA arch matrix", "[other][frameworks]") {
  const auto torch = torch_from("torch_release_matrix.csv");
  CHECK(build_ids(torch, "2.12") == std::vector<std::string>{"cu126", "cu126-aarch64", "cu130"});
  const auto& cu126 = build_of(torch, "2.12", "cu126");
  CHECK(cu126.platforms == std::vector<Platform>{Platform::linux_x86_64, Platform::windows_x86_64});
  CHECK(cu126.cuda_arch == archs({"5.0", "6.0", "7.0", "7.5", "8.0", "8.6", "9.0"}));
  CHECK(requirement(cu126, "python") == normalized(">=3.10,<3.14"));
  const auto& aarch64 = build_of(torch, "2.12", "cu126-aarch64");
  CHECK(aarch64.platforms == std::vector<Platform>{Platform::linux_aarch64});
  CHECK(aarch64.cuda_arch == archs({"8.0", "9.0"}));
  CHECK(aarch64.tested == cu126.tested);
  // "12.0+PTX" is read as 12.0.
  CHECK(build_of(torch, "2.12", "cu130").cuda_arch ==
        archs({"7.5", "8.0", "8.6", "9.0", "10.0", "12.0"}));
}

TEST_CASE("torch: an unreadable cell is an error at file:line", "[other][frameworks]") {
  const auto matrix = other_fixture("torch_release_matrix_bad.csv");
  const auto previous = other_fixture("torch_previous_versions.csv");
  const auto arch = other_fixture("torch_arch_matrix.csv");
  auto recipe = import_torch({.release_matrix = {matrix, "matrix.csv"},
                              .previous_versions = {previous, "previous.csv"},
                              .arch_matrix = {arch, "arch.csv"}});
  REQUIRE_FALSE(recipe);
  CHECK(recipe.error().headline() == "matrix.csv:3: cannot read the release matrix row");
  CHECK(recipe.error().causes() == std::vector<std::string>{"unrecognised CUDA entry `cuBLAS 11`"});
}

TEST_CASE("tensorflow: rows split into tensorflow and tensorflow-gpu", "[other][frameworks]") {
  const auto recipes = tensorflow_fixture();
  CHECK(recipes.tensorflow.name == "tensorflow");
  CHECK(recipes.tensorflow_gpu.name == "tensorflow-gpu");
  CHECK(recipes.tensorflow.versions.size() == 2);
  CHECK(recipes.tensorflow_gpu.versions.size() == 4);

  const auto& tf210 = build_of(recipes.tensorflow, "2.10.0", "cuda11.2");
  CHECK(requirement(tf210, "cuda") == normalized(">=11.2,<12"));
  CHECK(requirement(tf210, "cudnn") == normalized(">=8.1,<9"));
  CHECK(requirement(tf210, "python") == normalized(">=3.7,<3.11"));
  CHECK(tf210.platforms == std::vector<Platform>{Platform::linux_x86_64});
  CHECK(requirement(build_of(recipes.tensorflow, "2.1.0", "cuda10.1"), "python") ==
        normalized(">=3.5,<3.8"));
  // The Windows table spells 2.x GPU rows `tensorflow_gpu-`.
  CHECK(build_of(recipes.tensorflow_gpu, "2.10.0", "cuda11.2").platforms ==
        std::vector<Platform>{Platform::windows_x86_64});
}

TEST_CASE("tensorflow-gpu 1.x: exact CUDA minor, Linux and Windows rows joined or split",
          "[other][frameworks]") {
  const auto recipes = tensorflow_fixture();
  // The fixture's Windows 1.6.0 row repeats the Linux facts, so the build is shared.
  const auto& tf16 = build_of(recipes.tensorflow_gpu, "1.6.0", "cuda9.0");
  CHECK(requirement(tf16, "cuda") == "==9.0.*");
  CHECK(requirement(tf16, "cudnn") == normalized(">=7,<8"));
  CHECK(requirement(tf16, "python") == normalized(">=3.3,<3.7"));
  CHECK(tf16.tested == std::map<std::string, std::string>{{"cuda", "9"}, {"cudnn", "7"}});
  CHECK(tf16.platforms == std::vector<Platform>{Platform::linux_x86_64, Platform::windows_x86_64});

  CHECK(build_ids(recipes.tensorflow_gpu, "1.12.0") ==
        std::vector<std::string>{"cuda9.0", "cuda9.0-windows"});
  const auto& windows = build_of(recipes.tensorflow_gpu, "1.12.0", "cuda9.0-windows");
  CHECK(windows.platforms == std::vector<Platform>{Platform::windows_x86_64});
  CHECK(requirement(windows, "cudnn") == normalized(">=7.2,<8"));
  CHECK(requirement(windows, "python") == normalized(">=3.5,<3.7"));
  CHECK(windows.tested == std::map<std::string, std::string>{{"cuda", "9.0"}, {"cudnn", "7.2"}});

  const auto& tf10 = build_of(recipes.tensorflow_gpu, "1.0.0", "cuda8.0");
  CHECK(requirement(tf10, "cuda") == "==8.0.*");
  CHECK(requirement(tf10, "python") == normalized(">=3.5,<3.6"));
}

TEST_CASE("tensorflow: an unreadable row is an error at file:line", "[other][frameworks]") {
  const auto bad = other_fixture("tensorflow_bad.csv");
  const auto windows_gpu = other_fixture("tensorflow_windows_gpu.csv");
  auto recipes =
      import_tensorflow({.linux_gpu = {bad, "linux.csv"}, .windows_gpu = {windows_gpu, "w.csv"}});
  REQUIRE_FALSE(recipes);
  CHECK(recipes.error().headline() == "linux.csv:4: cannot read the tested-build row");

  auto unknown = import_tensorflow(
      {.linux_gpu = {"Version,Python version,cuDNN,CUDA\ntensorflow_cpu-2.1.0,3.7,7.6,10.1\n",
                     "l.csv"},
       .windows_gpu = {windows_gpu, "w.csv"}});
  REQUIRE_FALSE(unknown);
  CHECK(unknown.error().headline() == "l.csv:2: cannot read the tested-build row");
  CHECK(unknown.error().causes() ==
        std::vector<std::string>{"unknown package in `tensorflow_cpu-2.1.0`"});
}

TEST_CASE("frameworks: the real tables give the headline facts", "[other][upstream]") {
  const auto upstream = envkit::test::test_data_dir() / ".." / ".." / ".." / "shared" / "upstream";
  if (!fs::exists(upstream / "pytorch") || !fs::exists(upstream / "tensorflow-tested-builds")) {
    envkit::test::skip_test(envkit::test::SkipKind::expected,
                            "no upstream data at " + upstream.string());
    return;
  }
  const auto read = [&](const char* path) {
    return envkit::sys::read_file(upstream / path).value();
  };
  const auto matrix = read("pytorch/pytorch_release_compat_matrix.csv");
  const auto previous = read("pytorch/previous_versions_wheel_cuda_variants.csv");
  const auto arch = read("gpu-arch-and-compiler-support/pytorch_cuda_arch_support_matrix.csv");
  auto torch = import_torch({.release_matrix = {matrix, "pytorch_release_compat_matrix.csv"},
                             .previous_versions = {previous, "previous_versions.csv"},
                             .arch_matrix = {arch, "pytorch_cuda_arch_support_matrix.csv"}});
  INFO((torch.ok() ? "" : torch.error().to_string()));
  REQUIRE(torch);
  CHECK(torch->versions.front().version.original() == "1.0.0");
  CHECK(torch->versions.back().version.original() == "2.14");
  CHECK(build_ids(*torch, "2.1") == std::vector<std::string>{"cu118", "cu121"});
  CHECK(build_of(*torch, "2.1", "cu121").tested.at("cudnn") == "8.9.2.26");
  CHECK(requirement(build_of(*torch, "2.1", "cu118"), "python") == normalized(">=3.8,<3.12"));
  CHECK(requirement(build_of(*torch, "1.12.1", "cu102"), "cuda") == "==10.2.*");
  CHECK(build_of(*torch, "2.9", "cu128").platforms ==
        std::vector<Platform>{Platform::linux_x86_64, Platform::windows_x86_64});

  const auto linux_gpu = read("tensorflow-tested-builds/tensorflow_tested_linux_gpu.csv");
  const auto windows_gpu = read("tensorflow-tested-builds/tensorflow_tested_windows_gpu.csv");
  auto tf = import_tensorflow({.linux_gpu = {linux_gpu, "tensorflow_tested_linux_gpu.csv"},
                               .windows_gpu = {windows_gpu, "tensorflow_tested_windows_gpu.csv"}});
  INFO((tf.ok() ? "" : tf.error().to_string()));
  REQUIRE(tf);
  const auto& tf16 = build_of(tf->tensorflow_gpu, "1.6.0", "cuda9.0");
  CHECK(requirement(tf16, "cuda") == "==9.0.*");
  CHECK(requirement(tf16, "cudnn") == normalized(">=7,<8"));
  CHECK(tf16.platforms == std::vector<Platform>{Platform::linux_x86_64});
  CHECK(build_of(tf->tensorflow_gpu, "1.6.0", "cuda9.0-windows").platforms ==
        std::vector<Platform>{Platform::windows_x86_64});
  CHECK(requirement(build_of(tf->tensorflow, "2.15.0", "cuda12.2"), "python") ==
        normalized(">=3.9,<3.12"));
  CHECK(tf->tensorflow.versions.size() == 22);
  CHECK(tf->tensorflow_gpu.versions.size() == 28);
}
