// query_libcuda end to end: fork, dlopen and the report, against fake driver
// libraries compiled here with the host's C compiler.
#include "envkit/gpu/libcuda_probe.hpp"

#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <chrono>

#include "envkit/gpu/host_probe.hpp"
#include "envkit/sys/process.hpp"
#include "support/scoped_env.hpp"
#include "support/skip.hpp"
#include "support/temp_dir.hpp"

namespace {

namespace gpu = envkit::gpu;
namespace fs = std::filesystem;
using envkit::specs::ComputeCapability;
using namespace std::chrono_literals;

// The driver API functions the probe calls, answering as a machine with an A100
// and an H100 and a driver for CUDA 12.4. -DFAKE_INIT=<code> makes cuInit fail,
// -DFAKE_HANG makes it hang, -DFAKE_ABORT makes it crash; -DFAKE_NO_ERROR_NAME
// leaves out cuGetErrorName.
constexpr std::string_view kFakeLibcuda = R"(
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifndef FAKE_INIT
#define FAKE_INIT 0
#endif
static const char* names[] = {"NVIDIA A100-SXM4-80GB", "NVIDIA H100 80GB HBM3"};
static const int majors[] = {8, 9};
int cuDriverGetVersion(int* version) { *version = 12040; return 0; }
int cuInit(unsigned flags) {
  (void)flags;
#if defined(FAKE_HANG)
  for (;;) pause();
#elif defined(FAKE_ABORT)
  abort();
#endif
  return FAKE_INIT;
}
int cuDeviceGetCount(int* count) { *count = 2; return 0; }
int cuDeviceGet(int* device, int ordinal) {
  if (ordinal < 0 || ordinal > 1) return 101;
  *device = ordinal;
  return 0;
}
int cuDeviceGetAttribute(int* value, int attribute, int device) {
  if (device < 0 || device > 1) return 101;
  if (attribute == 75) { *value = majors[device]; return 0; }
  if (attribute == 76) { *value = 0; return 0; }
  return 1;
}
int cuDeviceGetName(char* name, int length, int device) {
  if (device < 0 || device > 1 || length < 1) return 101;
  strncpy(name, names[device], (size_t)length - 1);
  name[length - 1] = 0;
  return 0;
}
#ifndef FAKE_NO_ERROR_NAME
int cuGetErrorName(int error, const char** name) {
  switch (error) {
    case 100: *name = "CUDA_ERROR_NO_DEVICE"; return 0;
    case 101: *name = "CUDA_ERROR_INVALID_DEVICE"; return 0;
    default: *name = 0; return 1;
  }
}
#endif
)";

// Builds a fake libcuda.so.1 in `dir` with `defines`; nullopt, the skip recorded, when
// there is no C compiler.
std::optional<std::string> fake_libcuda(
    const envkit::test::TempDir& dir, const std::vector<std::string>& defines = {},
    std::source_location where = std::source_location::current()) {
  if (envkit::test::program_missing("cc", where)) return std::nullopt;
  const auto source = dir.write("fake_libcuda.c", kFakeLibcuda);
  const auto library = dir.path() / "lib" / "libcuda.so.1";
  fs::create_directories(library.parent_path());
  std::vector<std::string> argv{"cc", "-shared", "-fPIC", "-o", library.string(), source.string()};
  argv.insert(argv.end(), defines.begin(), defines.end());
  const auto compiled = envkit::sys::run_process(argv);
  REQUIRE(compiled.ok());
  INFO(compiled->err);
  REQUIRE(compiled->exit_code == 0);
  return library.string();
}

// The probe's child has been reaped: this process has no child left at all.
bool no_child_left() {
  errno = 0;
  return ::waitpid(-1, nullptr, WNOHANG) == -1 && errno == ECHILD;
}

}  // namespace

TEST_CASE("libcuda in a child process: the driver's CUDA and every GPU", "[gpu]") {
  envkit::test::TempDir dir;
  const auto library = fake_libcuda(dir);
  if (!library) return;  // skipped: no C compiler
  const auto report = gpu::query_libcuda(*library, 10s);
  REQUIRE(report.has_value());
  CHECK(report->loaded);
  CHECK(report->problems.empty());
  REQUIRE(report->driver_cuda.has_value());
  CHECK(report->driver_cuda->original() == "12.4");
  REQUIRE(report->gpus.has_value());
  REQUIRE(report->gpus->size() == 2);
  CHECK(report->gpus->at(0).name == "NVIDIA A100-SXM4-80GB");
  CHECK(report->gpus->at(0).compute_capability == ComputeCapability{8, 0});
  CHECK(report->gpus->at(1).name == "NVIDIA H100 80GB HBM3");
  CHECK(report->gpus->at(1).compute_capability == ComputeCapability{9, 0});
  CHECK(no_child_left());
}

TEST_CASE("libcuda whose cuInit finds no device: no GPUs and the error's name", "[gpu]") {
  envkit::test::TempDir dir;
  const auto library = fake_libcuda(dir, {"-DFAKE_INIT=100"});
  if (!library) return;  // skipped: no C compiler
  const auto report = gpu::query_libcuda(*library, 10s);
  REQUIRE(report.has_value());
  CHECK(report->driver_cuda->original() == "12.4");
  CHECK_FALSE(report->gpus.has_value());
  CHECK(report->problems == std::vector<std::string>{"cuInit failed: CUDA_ERROR_NO_DEVICE (100)"});
  CHECK(no_child_left());
}

TEST_CASE("libcuda whose cuInit hangs is killed at the timeout", "[gpu]") {
  envkit::test::TempDir dir;
  const auto library = fake_libcuda(dir, {"-DFAKE_HANG"});
  if (!library) return;  // skipped: no C compiler
  const auto start = std::chrono::steady_clock::now();
  const auto report = gpu::query_libcuda(*library, 300ms);
  const auto took = std::chrono::steady_clock::now() - start;
  CHECK(took >= 300ms);
  CHECK(took < 5s);
  REQUIRE(report.has_value());
  // What it said before cuInit is kept.
  CHECK(report->driver_cuda->original() == "12.4");
  CHECK_FALSE(report->gpus.has_value());
  CHECK(report->problems ==
        std::vector<std::string>{
            "did not answer within 300 ms (a wedged driver?); the probe process was killed"});
  CHECK(no_child_left());
}

TEST_CASE("libcuda that crashes the child leaves a problem, not a crash", "[gpu]") {
  envkit::test::TempDir dir;
  const auto library = fake_libcuda(dir, {"-DFAKE_ABORT", "-DFAKE_NO_ERROR_NAME"});
  if (!library) return;  // skipped: no C compiler
  const auto report = gpu::query_libcuda(*library, 10s);
  REQUIRE(report.has_value());
  CHECK_FALSE(report->gpus.has_value());
  REQUIRE(report->problems.size() == 1);
  CHECK_THAT(report->problems[0], Catch::StartsWith("the probe process died of signal 6 ("));
  CHECK(no_child_left());
}

TEST_CASE("libcuda that is not installed is no answer and no problem", "[gpu]") {
  envkit::test::TempDir dir;
  CHECK_FALSE(gpu::query_libcuda((dir.path() / "libcuda.so.1").string(), 10s).has_value());
  CHECK(no_child_left());
}

TEST_CASE("a libcuda.so.1 that is not a library is a problem", "[gpu]") {
  envkit::test::TempDir dir;
  const auto library = dir.write("libcuda.so.1", "not an ELF file\n");
  const auto report = gpu::query_libcuda(library.string(), 10s);
  REQUIRE(report.has_value());
  CHECK_FALSE(report->loaded);
  REQUIRE(report->problems.size() == 1);
  CHECK_THAT(report->problems[0], Catch::StartsWith("cannot be loaded: " + library.string()));
}

TEST_CASE("probe_host takes the GPUs and the driver's CUDA from a real libcuda", "[gpu]") {
  envkit::test::TempDir dir;
  const auto library = fake_libcuda(dir);
  if (!library) return;  // skipped: no C compiler
  gpu::ProbeSources sources{
      .variable = [](const envkit::env::Variable&) -> std::optional<std::string> {
        return std::nullopt;
      },
      .read_file = [](const fs::path& path) -> std::optional<std::string> {
        if (path == "/sys/module/nvidia/version") return "550.54.15\n";
        return std::nullopt;
      },
      .query_nvidia_smi = []() -> std::optional<envkit::sys::ProcessOutput> {
        FAIL("nvidia-smi asked although the other sources knew every fact");
        return std::nullopt;
      },
      .query_libcuda = [&] { return gpu::query_libcuda(*library, 10s); },
  };
  const auto facts = gpu::probe_host(sources);
  REQUIRE(facts.ok());
  CHECK(facts->driver->original() == "550.54.15");
  CHECK(facts->driver_source.to_string() == "/sys/module/nvidia/version");
  CHECK(facts->driver_cuda->original() == "12.4");
  CHECK(facts->driver_cuda_source.to_string() == *library);  // the library that answered
  REQUIRE(facts->gpus.size() == 2);
  CHECK(facts->gpus[1].name == "NVIDIA H100 80GB HBM3");
  CHECK(facts->gpus_source.to_string() == *library);
  CHECK(facts->notes.empty());
}

// The seam tests use to hide the machine's driver (support/envkit_runner.cpp):
// host_sources() asks the libcuda and nvidia-smi these variables name, and a path
// that does not exist is a machine without them.
TEST_CASE("host_sources asks the libcuda and nvidia-smi ENVKIT_LIBCUDA and ENVKIT_NVIDIA_SMI name",
          "[gpu]") {
  envkit::test::TempDir dir;
  const auto library = fake_libcuda(dir);
  if (!library) return;  // skipped: no C compiler
  const auto smi = dir.write("nvidia-smi", "#!/bin/sh\necho '535.129.03, 8.0, NVIDIA A100'\n");
  fs::permissions(smi, fs::perms::owner_all);
  using envkit::test::ScopedEnv;
  const ScopedEnv driver("ENVKIT_OVERRIDE_DRIVER", std::nullopt);
  const ScopedEnv arch("ENVKIT_OVERRIDE_CUDA_ARCH", std::nullopt);
  const ScopedEnv sys_file("ENVKIT_SYS_DRIVER_VERSION", (dir.path() / "no-sys-file").string());
  const ScopedEnv proc_file("ENVKIT_PROC_DRIVER_VERSION", (dir.path() / "no-proc-file").string());
  {
    const ScopedEnv libcuda("ENVKIT_LIBCUDA", *library);
    const ScopedEnv nvidia_smi("ENVKIT_NVIDIA_SMI", smi.string());
    const auto facts = gpu::probe_host(gpu::host_sources());
    REQUIRE(facts.ok());
    CHECK(facts->driver->original() == "535.129.03");
    CHECK(facts->driver_source.to_string() == "nvidia-smi");
    CHECK(facts->driver_cuda->original() == "12.4");
    REQUIRE(facts->gpus.size() == 2);
    CHECK(facts->gpus[1].name == "NVIDIA H100 80GB HBM3");
    CHECK(facts->gpus_source.to_string() == *library);
  }
  const ScopedEnv libcuda("ENVKIT_LIBCUDA", (dir.path() / "no-libcuda.so.1").string());
  const ScopedEnv nvidia_smi("ENVKIT_NVIDIA_SMI", (dir.path() / "no-nvidia-smi").string());
  const auto facts = gpu::probe_host(gpu::host_sources());
  REQUIRE(facts.ok());
  CHECK_FALSE(facts->driver);
  CHECK_FALSE(facts->driver_cuda);
  CHECK(facts->gpus.empty());
  CHECK(facts->notes.empty());
  CHECK(no_child_left());
}

// WSL 2 as a tree: its kernel's /proc/version, /dev/dxg, and the Windows driver's
// libcuda.so.1 and nvidia-smi under usr/lib/wsl/lib (where the loader's cache and
// PATH may not reach). host_sources(root) reads that tree instead of the machine.
TEST_CASE("host_sources finds WSL's libcuda and nvidia-smi under /usr/lib/wsl/lib", "[gpu][wsl]") {
  envkit::test::TempDir dir;
  const auto library = fake_libcuda(dir);
  if (!library) return;  // skipped: no C compiler
  const auto root = dir.path() / "root";
  const auto wsl_lib = root / "usr/lib/wsl/lib";
  fs::create_directories(wsl_lib);
  fs::copy_file(*library, wsl_lib / "libcuda.so.1");
  dir.write("root/proc/version",
            "Linux version 5.15.153.1-microsoft-standard-WSL2 (root@941d701f84f1) (gcc (GCC) "
            "11.2.0, GNU ld (GNU Binutils) 2.37) #1 SMP Fri Mar 29 23:14:13 UTC 2024\n");
  const auto smi = dir.write("root/usr/lib/wsl/lib/nvidia-smi",
                             "#!/bin/sh\n"
                             "[ \"$1\" = --query-gpu=driver_version,compute_cap,name ] || exit 2\n"
                             "echo '566.36, 8.9, NVIDIA GeForce RTX 4070'\n");
  fs::permissions(smi, fs::perms::owner_all);
  using envkit::test::ScopedEnv;
  const ScopedEnv driver("ENVKIT_OVERRIDE_DRIVER", std::nullopt);
  const ScopedEnv arch("ENVKIT_OVERRIDE_CUDA_ARCH", std::nullopt);
  const ScopedEnv sys_file("ENVKIT_SYS_DRIVER_VERSION", std::nullopt);
  const ScopedEnv proc_file("ENVKIT_PROC_DRIVER_VERSION", std::nullopt);
  const ScopedEnv libcuda("ENVKIT_LIBCUDA", std::nullopt);
  const ScopedEnv nvidia_smi("ENVKIT_NVIDIA_SMI", std::nullopt);

  SECTION("WSL 1: the kernel says WSL, but there is no /dev/dxg") {
    const auto facts = gpu::probe_host(gpu::host_sources(root));
    REQUIRE(facts.ok());
    REQUIRE(facts->wsl.has_value());
    CHECK_FALSE(facts->wsl->gpu_device);
  }
  SECTION("WSL 2: the driver from WSL's nvidia-smi, the GPUs from WSL's libcuda") {
    dir.write("root/dev/dxg", "");
    const auto facts = gpu::probe_host(gpu::host_sources(root));
    REQUIRE(facts.ok());
    REQUIRE(facts->wsl.has_value());
    CHECK(facts->wsl->gpu_device);
    REQUIRE(facts->driver.has_value());
    CHECK(facts->driver->original() == "566.36");
    CHECK(facts->driver_source.to_string() == "nvidia-smi");
    REQUIRE(facts->driver_cuda.has_value());
    CHECK(facts->driver_cuda->original() == "12.4");
    CHECK(facts->driver_cuda_source.to_string() == (wsl_lib / "libcuda.so.1").string());
    REQUIRE(facts->gpus.size() == 2);  // what the fake libcuda reports
    CHECK(facts->gpus[0].name == "NVIDIA A100-SXM4-80GB");
    CHECK(facts->gpus_source.to_string() == (wsl_lib / "libcuda.so.1").string());
    CHECK(facts->notes.empty());
  }
  SECTION("a tree without WSL's folder has no driver, and is not WSL") {
    fs::remove_all(root / "usr");
    dir.write("root/proc/version", "Linux version 6.8.0-45-generic (buildd@lcy02-amd64-115)\n");
    const auto facts = gpu::probe_host(gpu::host_sources(root));
    REQUIRE(facts.ok());
    CHECK_FALSE(facts->wsl.has_value());
    CHECK_FALSE(facts->driver.has_value());
    CHECK(facts->gpus.empty());
  }
  CHECK(no_child_left());
}
