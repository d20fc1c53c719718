// Opt-in (ENVKIT_LIVE_TESTS=1): NVIDIA's real wheels from PyPI, locked with
// the committed recipe database, installed into a fresh prefix, and a program
// that links cuDNN and cuBLAS built against it and run.
#include <catch2/catch.hpp>
#include <fstream>
#include <optional>
#include <set>

#include "envkit/lock/lockfile.hpp"
#include "envkit/sys/process.hpp"
#include "support/envkit_runner.hpp"
#include "support/skip.hpp"
#include "support/temp_dir.hpp"

namespace envkit::test {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kCublasProgram = R"(#include <cublas_v2.h>
#include <cudnn.h>
#include <cstdio>
int main() {
  int cublas_major = 0;
  cublasGetProperty(MAJOR_VERSION, &cublas_major);
  std::printf("cudnn %zu cublas %d\n", cudnnGetVersion(), cublas_major);
  return 0;
}
)";

// What ENVKIT_LIVE_TESTS=1 lets these tests do.
constexpr std::string_view kLiveDownloads = "download NVIDIA's wheels from PyPI (~1 GB)";

// Locks `manifest` with the committed database, keeps only the wheels of
// `components`, and installs them into the project's prefix.
fs::path lock_and_install(const fs::path& work, const std::string& manifest,
                          const std::set<std::string>& components) {
  const auto project = work / "project";
  fs::create_directories(project);
  std::ofstream(project / "envkit.yaml") << manifest;
  const auto locked = run_envkit({.args = {"-C", project.string(), "lock"}});
  INFO(locked.err);
  REQUIRE(locked.exit_code == 0);
  auto lockfile = lock::load(project / "envkit.lock");
  REQUIRE(lockfile);
  for (auto& platform : lockfile->platforms) {
    std::erase_if(platform.packages, [](const lock::LockedPackage& p) {
      return p.name != "cuda" && p.name != "cudnn";
    });
    for (auto& package : platform.packages) {
      std::erase_if(package.artifacts, [&](const specs::Artifact& a) {
        return a.kind != specs::ArtifactKind::wheel || !components.contains(a.component);
      });
    }
  }
  std::ofstream(project / "envkit.lock") << lock::write(*lockfile);
  const auto installed =
      run_envkit({.args = {"-C", project.string(), "--cache-dir", (work / "cache").string(),
                           "install", "--frozen", "--packaging", "wheel"}});
  INFO(installed.err);
  REQUIRE(installed.exit_code == 0);
  std::ofstream(project / "main.cpp") << kCublasProgram;
  return project;
}

std::string build_and_run(const fs::path& project, const std::vector<std::string>& compile) {
  auto built = sys::run_process(compile, {.cwd = project, .timeout = std::chrono::minutes(2)});
  REQUIRE(built);
  INFO(built->err);
  REQUIRE(built->exit_code == 0);
  auto ran = sys::run_process({(project / "main").string()}, {.cwd = project});
  REQUIRE(ran);
  INFO(ran->err);
  CHECK(ran->exit_code == 0);
  return ran->out;
}

TEST_CASE("live: CUDA 12.4 and cuDNN 9.1 wheels from PyPI make a prefix to build against",
          "[cli][install][live]") {
  if (live_tests_off(kLiveDownloads)) return;
  TempDir work;
  const auto project = lock_and_install(
      work.path(),
      "requires:\n  cuda: \"12.4\"\n  cudnn: \">=9.1,<9.2\"\nsystem:\n  driver: 550.54.15\n",
      {"cuda_cudart", "cuda_nvcc", "libcublas", "cudnn"});
  const auto prefix = project / ".envkit" / "env";
  // NVIDIA's cu12 nvcc wheels carry ptxas, crt/ and nvvm/ but not the nvcc
  // driver itself, so the host compiler builds against the prefix here.
  CHECK(fs::exists(prefix / "bin" / "ptxas"));
  CHECK_FALSE(fs::exists(prefix / "bin" / "nvcc"));
  CHECK(fs::exists(prefix / "include" / "crt" / "host_config.h"));
  const auto out =
      build_and_run(project, {"g++", "main.cpp", "-I" + (prefix / "include").string(),
                              "-L" + (prefix / "lib").string(), "-lcudnn", "-lcublas",
                              "-Wl,-rpath," + (prefix / "lib").string(), "-o", "main"});
  CHECK_THAT(out, Catch::StartsWith("cudnn 9"));
  CHECK_THAT(out, Catch::EndsWith("cublas 12\n"));
}

TEST_CASE("live: CUDA 13 wheels from PyPI give a prefix whose nvcc compiles and links cuBLAS",
          "[cli][install][live]") {
  if (live_tests_off(kLiveDownloads)) return;
  TempDir work;
  const auto project = lock_and_install(
      work.path(),
      "requires:\n  cuda: \"13.0\"\n  cudnn: \">=9.13\"\nsystem:\n  driver: 580.95.05\n",
      {"cuda_cudart", "cuda_nvcc", "cuda_crt", "libnvvm", "libcublas", "cudnn"});
  const auto prefix = project / ".envkit" / "env";
  const auto out = build_and_run(
      project, {(prefix / "bin" / "nvcc").string(), "-x", "c++", "main.cpp", "-lcudnn", "-lcublas",
                "-Xlinker", "-rpath," + (prefix / "lib").string(), "-o", "main"});
  CHECK_THAT(out, Catch::StartsWith("cudnn 9"));
  CHECK_THAT(out, Catch::EndsWith("cublas 13\n"));
}

// NVIDIA's download host answers (this project's machines reach only PyPI and Debian).
std::optional<std::string> nvidia_unreachable(const std::string& url) {
  auto probe = sys::run_process({"curl", "-sSfI", "--max-time", "20", "-o", "/dev/null", url},
                                {.timeout = std::chrono::seconds(30)});
  if (!probe) return probe.error().message();
  if (probe->exit_code != 0) return probe->err.empty() ? "curl failed" : probe->err;
  return std::nullopt;
}

TEST_CASE("live: NVIDIA's CUDA 10.0 runfile installs its runtime cuBLAS and nvcc into a prefix",
          "[cli][install][live][runfile]") {
  if (live_tests_off("download NVIDIA's CUDA 10.0 runfile (~2 GB)")) return;
  const std::string url =
      "https://developer.nvidia.com/compute/cuda/10.0/Prod/local_installers/"
      "cuda_10.0.130_410.48_linux";
  if (program_missing("curl")) return;
  if (const auto why = nvidia_unreachable(url)) {
    skip_test(SkipKind::expected, "NVIDIA's download host is unreachable from here (" + *why + ")");
    return;
  }
  TempDir work;
  const auto project = work.path() / "project";
  fs::create_directories(project);
  std::ofstream(project / "envkit.yaml")
      << "requires:\n  cuda: \"==10.0.130\"\nsystem:\n  driver: 410.48\n";
  const auto locked = run_envkit({.args = {"-C", project.string(), "lock"}});
  INFO(locked.err);
  REQUIRE(locked.exit_code == 0);
  const auto installed =
      run_envkit({.args = {"-C", project.string(), "--cache-dir", (work.path() / "cache").string(),
                           "install", "--frozen"}});
  INFO(installed.err);
  REQUIRE(installed.exit_code == 0);
  const auto prefix = project / ".envkit" / "env";
  CHECK(fs::exists(prefix / "lib" / "libcudart.so.10.0"));
  CHECK(fs::exists(prefix / "lib" / "libcublas.so.10.0"));
  CHECK(fs::exists(prefix / "bin" / "nvcc"));
  CHECK_FALSE(fs::exists(prefix / "samples"));
}

}  // namespace
}  // namespace envkit::test
