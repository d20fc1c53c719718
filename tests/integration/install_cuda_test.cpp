// Real binaries: a mirror in NVIDIA's redistributable format made from
// /usr/local/cuda's own files, imported as a recipe, locked and installed; then
// a host program compiles and links against the prefix, with g++ and with the
// prefix's own nvcc. Skipped where there is no /usr/local/cuda.
#include <catch2/catch.hpp>
#include <fstream>

#include "envkit/sys/process.hpp"
#include "support/envkit_runner.hpp"
#include "support/http_server.hpp"
#include "support/redist_fixture.hpp"
#include "support/skip.hpp"
#include "support/temp_dir.hpp"

namespace envkit::test {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kCudaRuntimeProgram = R"(#include <cuda_runtime_api.h>
#include <cstdio>
int main() {
  int version = 0;
  if (cudaRuntimeGetVersion(&version) != cudaSuccess) return 1;
  std::printf("cudart %d\n", version);
  return 0;
}
)";

// Only what compiling and linking host code needs from the 100 MB of cuda_nvcc:
// the driver program, the profile that points it at the prefix, its link stubs.
FixtureComponent nvcc_driver_only(FixtureComponent nvcc) {
  std::erase_if(nvcc.files, [](const FixtureFile& file) {
    return file.path != "bin/nvcc" && file.path != "bin/nvcc.profile" &&
           !file.path.starts_with("bin/crt/");
  });
  return nvcc;
}

sys::ProcessOutput run(const std::vector<std::string>& argv, const fs::path& cwd) {
  auto result = sys::run_process(argv, {.cwd = cwd, .timeout = std::chrono::minutes(2)});
  REQUIRE(result);
  return *result;
}

TEST_CASE("CUDA from /usr/local/cuda, repacked as NVIDIA redist: lock, install, compile, run",
          "[cli][install][cuda]") {
  auto runtime = real_cuda_component("nvidia_cuda_runtime-", "cuda_cudart");
  auto crt = real_cuda_component("nvidia_cuda_crt-", "cuda_crt");
  auto nvcc = real_cuda_component("nvidia_cuda_nvcc-", "cuda_nvcc");
  if (!runtime || !crt || !nvcc) {
    skip_test(SkipKind::expected, "no CUDA 13 tree with dist-info under /usr/local/cuda");
    return;
  }
  if (nginx_missing() || program_missing("g++")) return;
  TempDir work;
  const RedistMirror mirror(work.path() / "www");
  const std::vector<BuiltArtifact> built = {mirror.add_archive(*runtime), mirror.add_archive(*crt),
                                            mirror.add_archive(nvcc_driver_only(*nvcc))};
  // The release these component versions belong to (cuda_cudart 13.0.96 is CUDA 13.0.2).
  const auto manifest = mirror.write_redistrib("13.0.2", built);
  const StaticHttpServer server(mirror.root());
  const auto db = (work.path() / "db").string();
  const auto imported = run_envkit({.args = {"--recipes", db, "recipes", "import", "nvidia-redist",
                                             manifest.string(), "--base-url", server.url("/")}});
  REQUIRE(imported.exit_code == 0);

  const auto project = work.path() / "project";
  fs::create_directories(project);
  std::ofstream(project / "envkit.yaml") << "requires:\n  cuda: \"13.0\"\n";
  const auto installed =
      run_envkit({.args = {"-C", project.string(), "--recipes", db, "--cache-dir",
                           (work.path() / "cache").string(), "install"},
                  .env = {{"ENVKIT_OVERRIDE_DRIVER", "580.95.05"}}});
  INFO(installed.err);
  REQUIRE(installed.exit_code == 0);
  CHECK(fs::exists(project / "envkit.lock"));  // install locked first

  const auto prefix = project / ".envkit" / "env";
  std::ofstream(project / "main.cpp") << kCudaRuntimeProgram;
  SECTION("g++ with the prefix's headers and libraries") {
    const auto built_program = run(
        {"g++", "main.cpp", "-I" + (prefix / "include").string(), "-L" + (prefix / "lib").string(),
         "-lcudart", "-Wl,-rpath," + (prefix / "lib").string(), "-o", "main"},
        project);
    INFO(built_program.err);
    REQUIRE(built_program.exit_code == 0);
    const auto ran = run({(project / "main").string()}, project);
    CHECK(ran.exit_code == 0);
    CHECK(ran.out == "cudart 13000\n");
    // Linked against the prefix's libcudart, not a copy elsewhere on the machine.
    const auto linked = run({"ldd", (project / "main").string()}, project);
    CHECK_THAT(linked.out, Catch::Contains("libcudart.so.13 => " + (prefix / "lib").string()));
    CHECK(fs::read_symlink(prefix / "lib" / "libcudart.so") == "libcudart.so.13");
  }
  SECTION("the prefix's nvcc finds them through targets/x86_64-linux") {
    const auto built_program =
        run({(prefix / "bin" / "nvcc").string(), "-x", "c++", "main.cpp", "-lcudart", "-Xlinker",
             "-rpath," + (prefix / "lib").string(), "-o", "main-nvcc"},
            project);
    INFO(built_program.err);
    REQUIRE(built_program.exit_code == 0);
    const auto ran = run({(project / "main-nvcc").string()}, project);
    CHECK(ran.out == "cudart 13000\n");
  }
}

}  // namespace
}  // namespace envkit::test
