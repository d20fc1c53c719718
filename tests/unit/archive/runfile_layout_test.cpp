// NVIDIA runfiles' payloads map into the redist layout; only the locked
// components land, never the driver, samples, docs or Nsight.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "../../../src/archive/layout_paths.hpp"
#include "envkit/archive/layout.hpp"
#include "support/skip.hpp"

namespace {

using envkit::archive::layout_options;
using envkit::archive::LayoutTarget;
using envkit::archive::runfile_patch_options;
using envkit::specs::Layout;

const std::vector<std::string> kFrameworkComponents = {
    "cuda_cudart", "cuda_nvcc", "cuda_nvrtc",  "cuda_cupti",  "libcublas",
    "libcufft",    "libcurand", "libcusolver", "libcusparse", "cuda_cccl"};

LayoutTarget runfile_target(Layout layout, std::vector<std::string> components) {
  return {.layout = layout,
          .package = "cuda",
          .component = "cuda",
          .components = std::move(components)};
}

std::string runfile_placed(const envkit::archive::ExtractOptions& options, std::string_view path) {
  return options.map(path).value_or("-");
}

}  // namespace

TEST_CASE("cuda-runfile-nested places the nested toolkit runfile's tree only",
          "[archive][layout][runfile]") {
  const auto options =
      layout_options(runfile_target(Layout::cuda_runfile_nested, kFrameworkComponents));
  REQUIRE(options.nested_runfile);
  CHECK(options.nested_runfile("run_files/cuda-linux.9.0.176-22781540.run"));
  CHECK_FALSE(options.nested_runfile("run_files/cuda-samples.9.0.176-22781540-linux.run"));
  CHECK_FALSE(options.nested_runfile("run_files/NVIDIA-Linux-x86_64-384.81.run"));
  CHECK_FALSE(options.nested_runfile("cuda-installer.pl"));

  const std::string tree = "run_files/cuda-linux.9.0.176-22781540/";
  CHECK(runfile_placed(options, tree + "lib64/libcudart.so.9.0.176") == "lib/libcudart.so.9.0.176");
  CHECK(runfile_placed(options, tree + "lib64/libcublas.so.9.0") == "lib/libcublas.so.9.0");
  CHECK(runfile_placed(options, tree + "lib64/stubs/libcuda.so") == "lib/stubs/libcuda.so");
  CHECK(runfile_placed(options, tree + "include/cuda_runtime_api.h") ==
        "include/cuda_runtime_api.h");
  CHECK(runfile_placed(options, tree + "bin/nvcc") == "bin/nvcc");
  CHECK(runfile_placed(options, tree + "bin/crt/link.stub") == "bin/crt/link.stub");
  CHECK(runfile_placed(options, tree + "nvvm/bin/cicc") == "nvvm/bin/cicc");
  CHECK(runfile_placed(options, tree + "extras/CUPTI/lib64/libcupti.so.9.0") ==
        "lib/libcupti.so.9.0");
  CHECK(runfile_placed(options, tree + "extras/CUPTI/include/cupti.h") == "include/cupti.h");
  CHECK(runfile_placed(options, tree + "EULA.txt") == "share/licenses/cuda/cuda/EULA.txt");
  CHECK(runfile_placed(options, tree + "version.txt") == "version.txt");
  // What a framework never needs stays out.
  for (const auto* left_out :
       {"bin/nsight", "bin/nvvp", "bin/cuda-gdb", "lib64/libnppc.so.9.0", "lib64/libnvgraph.so",
        "doc/html/index.html", "samples/0_Simple/Makefile", "jre/bin/java", "libnsight/nsight",
        "install-linux.pl", "lib64/"}) {
    CAPTURE(left_out);
    CHECK(runfile_placed(options, tree + left_out) == "-");
  }
  // The outer installer's own files, the samples and the driver stay out.
  CHECK(runfile_placed(options, "cuda-installer.pl") == "-");
  CHECK(runfile_placed(options, "run_files/cuda-samples.9.0.176-22781540-linux/Makefile") == "-");
  CHECK(runfile_placed(options, "run_files/NVIDIA-Linux-x86_64-384.81/nvidia-installer") == "-");
}

TEST_CASE("cuda-runfile-nested places only the components the lock names",
          "[archive][layout][runfile]") {
  const auto options =
      layout_options(runfile_target(Layout::cuda_runfile_nested, {"cuda_cudart", "libcublas"}));
  const std::string tree = "run_files/cuda-linux.10.0.130-24817639/";
  CHECK(runfile_placed(options, tree + "lib64/libcudart.so.10.0") == "lib/libcudart.so.10.0");
  CHECK(runfile_placed(options, tree + "lib64/libcublas_static.a") == "lib/libcublas_static.a");
  CHECK(runfile_placed(options, tree + "lib64/libcufft.so.10.0") == "-");
  CHECK(runfile_placed(options, tree + "bin/nvcc") == "-");
  CHECK(runfile_placed(options, tree + "nvvm/lib64/libnvvm.so") == "-");
  CHECK(runfile_placed(options, tree + "extras/CUPTI/lib64/libcupti.so") == "-");
}

TEST_CASE("cuda-runfile-builds places wanted component folders of 11.x runfiles",
          "[archive][layout][runfile]") {
  const auto options =
      layout_options(runfile_target(Layout::cuda_runfile_builds, kFrameworkComponents));
  CHECK_FALSE(options.nested_runfile);
  CHECK(runfile_placed(options, "builds/cuda_cudart/lib64/libcudart.so.11.2.72") ==
        "lib/libcudart.so.11.2.72");
  CHECK(runfile_placed(options, "builds/cuda_cudart/targets/x86_64-linux/lib/libcudart.so.11.0") ==
        "lib/libcudart.so.11.0");
  CHECK(runfile_placed(options, "builds/libcublas/targets/x86_64-linux/include/cublas_v2.h") ==
        "include/cublas_v2.h");
  CHECK(runfile_placed(options, "builds/cuda_nvcc/bin/ptxas") == "bin/ptxas");
  CHECK(runfile_placed(options, "builds/cuda_nvcc/nvvm/libdevice/libdevice.10.bc") ==
        "nvvm/libdevice/libdevice.10.bc");
  CHECK(runfile_placed(options, "builds/cuda_cupti/extras/CUPTI/lib64/libcupti.so.11.2") ==
        "lib/libcupti.so.11.2");
  CHECK(runfile_placed(options, "builds/cuda_cccl/include/thrust/version.h") ==
        "include/thrust/version.h");
  // 11.x component folders hold lib64 and include as links into targets/: left out, the
  // files arrive through targets/.
  CHECK(runfile_placed(options, "builds/cuda_cudart/lib64") == "-");
  CHECK(runfile_placed(options, "builds/cuda_cudart/include") == "-");
  for (const auto* left_out :
       {"builds/nsight_compute/ncu", "builds/cuda_documentation/EULA.txt",
        "builds/libnpp/lib64/libnppc.so.11", "builds/cuda_samples/Makefile",
        "builds/NVIDIA-Linux-x86_64-460.32.03.run", "builds/cuda_nvcc/bin/cuda-gdb"}) {
    CAPTURE(left_out);
    CHECK(runfile_placed(options, left_out) == "-");
  }
}

TEST_CASE("cuda-runfile-builds reads 10.1 and 10.2's cuda-toolkit and cublas trees",
          "[archive][layout][runfile]") {
  const auto options =
      layout_options(runfile_target(Layout::cuda_runfile_builds, kFrameworkComponents));
  CHECK(runfile_placed(options, "builds/cuda-toolkit/lib64/libcudart.so.10.1.243") ==
        "lib/libcudart.so.10.1.243");
  CHECK(runfile_placed(options, "builds/cublas/lib64/libcublas.so.10.2.1.243") ==
        "lib/libcublas.so.10.2.1.243");
  CHECK(runfile_placed(options, "builds/cublas/include/cublas_api.h") == "include/cublas_api.h");
  CHECK(runfile_placed(options, "builds/cuda-toolkit/bin/nvcc") == "bin/nvcc");
  CHECK(runfile_placed(options, "builds/cuda-toolkit/lib64/libnvjpeg.so.10") == "-");
  CHECK(runfile_placed(options, "builds/cuda-samples/Makefile") == "-");
  CHECK(runfile_placed(options, "builds/integration/Nsight/nsight") == "-");
}

TEST_CASE("a patch runfile's toolkit tree lands like the release's own",
          "[archive][layout][runfile]") {
  const auto options =
      runfile_patch_options(runfile_target(Layout::cuda_runfile_nested, {"libcublas"}));
  CHECK_FALSE(options.nested_runfile);
  CHECK(runfile_placed(options, "lib64/libcublas.so.9.0.480") == "lib/libcublas.so.9.0.480");
  CHECK(runfile_placed(options, "include/cublas_api.h") == "include/cublas_api.h");
  CHECK(runfile_placed(options, "lib64/libcudart.so.9.0.176") == "-");
  CHECK(runfile_placed(options, "cuda-patch-installer.pl") == "-");
}

TEST_CASE("runfile library components agree with NVIDIA's soname table",
          "[archive][layout][runfile]") {
  namespace fs = std::filesystem;
  const fs::path table = fs::path(ENVKIT_SOURCE_DIR) / ".." / "shared" / "upstream" /
                         "nvidia-redist-archive-features" / "lookup_db_soname_to_package.json";
  if (!fs::exists(table)) {
    envkit::test::skip_test(envkit::test::SkipKind::expected,
                            "no upstream data at " + table.string());
    return;
  }
  std::ifstream in(table);
  const auto db = nlohmann::json::parse(in);
  std::size_t checked = 0;
  for (const auto& [platform, sonames] : db.items()) {
    for (const auto& [soname, versions] : sonames.items()) {
      const auto component = envkit::archive::detail::component_of_library(soname);
      if (!component) continue;  // not placed from runfiles (libOpenCL, libcufile, ...)
      for (const auto& [version, info] : versions.items()) {
        CAPTURE(platform, soname, version);
        CHECK(info.at("package_name").get<std::string>() == *component);
        ++checked;
      }
    }
  }
  CHECK(checked > 100);
}
