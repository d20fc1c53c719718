#include <catch2/catch.hpp>

#include "envkit/gpu/host_probe.hpp"
#include "envkit/gpu/libcuda_probe.hpp"
#include "envkit/sys/fs.hpp"
#include "support/envkit_runner.hpp"

namespace {

using envkit::specs::ComputeCapability;
namespace gpu = envkit::gpu;

std::string fixture(const std::string& name) {
  return envkit::sys::read_file(envkit::test::test_data_dir() / "gpu" / name).value();
}

}  // namespace

TEST_CASE("driver version from /proc/driver/nvidia/version", "[gpu]") {
  struct Case {
    std::string file;
    std::string original;
    std::string normalized;
  };
  const auto c = GENERATE(Case{"proc-version-550.txt", "550.54.15", "550.54.15"},
                          Case{"proc-version-450.txt", "450.80.02", "450.80.2"},
                          Case{"proc-version-open-535.txt", "535.129.03", "535.129.3"},
                          Case{"proc-version-open-570.txt", "570.195.03", "570.195.3"},
                          Case{"proc-version-tegra.txt", "34.1.1", "34.1.1"});
  CAPTURE(c.file);
  const auto version = gpu::parse_proc_driver_version(fixture(c.file));
  REQUIRE(version.ok());
  CHECK(version->original() == c.original);
  CHECK(version->to_string() == c.normalized);
}

TEST_CASE("driver version from /sys/module/nvidia/version", "[gpu]") {
  struct Case {
    std::string file;
    std::string original;
  };
  const auto c =
      GENERATE(Case{"sys-version-550.txt", "550.54.15"}, Case{"sys-version-450.txt", "450.80.02"},
               Case{"sys-version-open-570.txt", "570.195.03"});
  CAPTURE(c.file);
  const auto version = gpu::parse_sys_driver_version(fixture(c.file));
  REQUIRE(version.ok());
  CHECK(version->original() == c.original);
}

TEST_CASE("a /sys version file without a version is refused with the reason", "[gpu]") {
  CHECK(gpu::parse_sys_driver_version("").error().message() == "empty");
  CHECK(gpu::parse_sys_driver_version(" \n").error().message() == "empty");
  CHECK(gpu::parse_sys_driver_version("550.54.15\n550.54.15\n").error().message() ==
        "`550.54.15\n550.54.15` is not a driver version");
  CHECK(gpu::parse_sys_driver_version("NVRM version: 550.54.15\n").error().message() ==
        "`NVRM version: 550.54.15` is not a driver version");
}

TEST_CASE("/proc version text without a driver version is refused with the reason", "[gpu]") {
  CHECK(gpu::parse_proc_driver_version("").error().message() == "no `NVRM version:` line");
  CHECK(gpu::parse_proc_driver_version("GCC version:  gcc version 12.2.0\n").error().message() ==
        "no `NVRM version:` line");
  CHECK(gpu::parse_proc_driver_version("NVRM version: NVIDIA UNIX x86_64 Kernel Module\n")
            .error()
            .message() == "no driver version in `NVRM version: NVIDIA UNIX x86_64 Kernel Module`");
}

TEST_CASE("nvidia-smi query with one GPU", "[gpu]") {
  const auto gpus = gpu::parse_nvidia_smi_query(fixture("smi-h100.csv"));
  REQUIRE(gpus.ok());
  REQUIRE(gpus->size() == 1);
  CHECK(gpus->at(0).driver.original() == "550.54.15");
  CHECK(gpus->at(0).compute_capability == ComputeCapability{9, 0});
  CHECK(gpus->at(0).name == "NVIDIA H100 80GB HBM3");

  const auto blackwell = gpu::parse_nvidia_smi_query(fixture("smi-rtx5090.csv"));
  REQUIRE(blackwell.ok());
  CHECK(blackwell->at(0).compute_capability == ComputeCapability{12, 0});
}

TEST_CASE("nvidia-smi query on a machine with several GPUs keeps their order", "[gpu]") {
  const auto gpus = gpu::parse_nvidia_smi_query(fixture("smi-multi.csv"));
  REQUIRE(gpus.ok());
  REQUIRE(gpus->size() == 3);
  for (const auto& g : *gpus)
    CHECK(g.driver.original() == "535.129.03");
  CHECK(gpus->at(0).name == "NVIDIA A100-SXM4-40GB");
  CHECK(gpus->at(1).compute_capability == ComputeCapability{8, 0});
  CHECK(gpus->at(2).name == "NVIDIA RTX A6000");
  CHECK(gpus->at(2).compute_capability == ComputeCapability{8, 6});
}

TEST_CASE("nvidia-smi output that is not the query's answer is refused", "[gpu]") {
  CHECK(gpu::parse_nvidia_smi_query("")->empty());

  const auto no_driver = gpu::parse_nvidia_smi_query(fixture("smi-no-driver.txt"));
  REQUIRE_FALSE(no_driver.ok());
  CHECK(no_driver.error().message().starts_with(
      "nvidia-smi line 1 is not a GPU: `NVIDIA-SMI has failed because it couldn't communicate"));

  const auto old_driver = gpu::parse_nvidia_smi_query(fixture("smi-old-driver.txt"));
  REQUIRE_FALSE(old_driver.ok());
  CHECK(old_driver.error().causes() ==
        std::vector<std::string>{"expected `driver_version, compute_cap, name`"});

  const auto not_available =
      gpu::parse_nvidia_smi_query("550.54.15, 9.0, H100\n550.54.15, [N/A], X\n");
  REQUIRE_FALSE(not_available.ok());
  CHECK(not_available.error().message() == "nvidia-smi line 2 is not a GPU: `550.54.15, [N/A], X`");
}

TEST_CASE("ENVKIT_OVERRIDE_DRIVER is a version or none", "[gpu]") {
  CHECK_FALSE(gpu::parse_driver_override("none")->has_value());
  CHECK_FALSE(gpu::parse_driver_override("None")->has_value());
  const auto driver = gpu::parse_driver_override(" 450.80.02 ");
  REQUIRE(driver.ok());
  CHECK((*driver)->original() == "450.80.02");

  const auto bad = gpu::parse_driver_override("latest");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().code() == envkit::ErrorCode::input);
  CHECK(bad.error().message() == "`ENVKIT_OVERRIDE_DRIVER` is not a driver version: `latest`");
  CHECK(bad.error().hints() ==
        std::vector<std::string>{
            "set it to a version such as `550.54.15`, or to `none` for a machine without one"});
}

TEST_CASE("ENVKIT_OVERRIDE_CUDA_ARCH is a comma-separated list", "[gpu]") {
  const auto two = gpu::parse_cuda_arch_override("8.0, 9.0");
  REQUIRE(two.ok());
  CHECK(*two == std::vector<ComputeCapability>{{8, 0}, {9, 0}});
  CHECK(*gpu::parse_cuda_arch_override("sm_86") == std::vector<ComputeCapability>{{8, 6}});
  CHECK(gpu::parse_cuda_arch_override("")->empty());

  const auto bad = gpu::parse_cuda_arch_override("8.0,90");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().code() == envkit::ErrorCode::input);
  CHECK(bad.error().message() ==
        "`ENVKIT_OVERRIDE_CUDA_ARCH` is not a list of compute capabilities: `8.0,90`");
}

namespace {

gpu::LibcudaReport libcuda_fixture(const std::string& name) {
  auto report = gpu::parse_libcuda_report(fixture(name));
  REQUIRE(report.ok());
  return std::move(report).value();
}

}  // namespace

TEST_CASE("libcuda report of a machine with eight GPUs", "[gpu]") {
  const auto report = libcuda_fixture("libcuda-h100x8.txt");
  CHECK(report.loaded);
  REQUIRE(report.driver_cuda.has_value());
  CHECK(report.driver_cuda->original() == "12.4");
  REQUIRE(report.gpus.has_value());
  REQUIRE(report.gpus->size() == 8);
  for (const auto& g : *report.gpus) {
    CHECK(g.name == "NVIDIA H100 80GB HBM3");
    CHECK(g.compute_capability == ComputeCapability{9, 0});
  }
  CHECK(report.problems.empty());
}

TEST_CASE("libcuda report of GPUs of two kinds keeps their order", "[gpu]") {
  const auto report = libcuda_fixture("libcuda-mixed.txt");
  CHECK(report.driver_cuda->original() == "12.2");
  REQUIRE(report.gpus->size() == 3);
  CHECK(report.gpus->at(0).name == "NVIDIA RTX A6000");
  CHECK(report.gpus->at(0).compute_capability == ComputeCapability{8, 6});
  CHECK(report.gpus->at(2).name == "NVIDIA GeForce GTX 1080 Ti");
  CHECK(report.gpus->at(2).compute_capability == ComputeCapability{6, 1});
}

TEST_CASE("libcuda report of a driver whose cuInit fails", "[gpu]") {
  const auto no_device = libcuda_fixture("libcuda-no-device.txt");
  CHECK(no_device.loaded);
  CHECK(no_device.driver_cuda->original() == "12.4");  // asked before cuInit
  CHECK_FALSE(no_device.gpus.has_value());
  CHECK(no_device.problems ==
        std::vector<std::string>{"cuInit failed: CUDA_ERROR_NO_DEVICE (100)"});

  const auto mismatch = libcuda_fixture("libcuda-driver-mismatch.txt");
  CHECK_FALSE(mismatch.gpus.has_value());
  CHECK(mismatch.problems ==
        std::vector<std::string>{"cuInit failed: CUDA_ERROR_SYSTEM_DRIVER_MISMATCH (803)"});
}

TEST_CASE("libcuda report of the toolkit's stub library", "[gpu]") {
  const auto stub = libcuda_fixture("libcuda-stub.txt");
  CHECK(stub.loaded);
  CHECK_FALSE(stub.driver_cuda.has_value());
  CHECK_FALSE(stub.gpus.has_value());
  // The stub's cuGetErrorName fails too: only the code (CUDA_ERROR_STUB_LIBRARY).
  CHECK(stub.problems == std::vector<std::string>{"cuDriverGetVersion failed with code 34",
                                                  "cuInit failed with code 34"});
}

TEST_CASE("libcuda report of a machine without the library", "[gpu]") {
  const auto absent = libcuda_fixture("libcuda-absent.txt");
  CHECK_FALSE(absent.loaded);
  CHECK(absent.load_error ==
        "libcuda.so.1: cannot open shared object file: No such file or directory");
  CHECK_FALSE(absent.driver_cuda.has_value());
  CHECK_FALSE(absent.gpus.has_value());
}

TEST_CASE("libcuda report details", "[gpu]") {
  SECTION("CUDA versions as cuDriverGetVersion encodes them") {
    const auto version = [](const std::string& number) {
      return gpu::parse_libcuda_report("driver_version " + number + "\n")->driver_cuda->original();
    };
    CHECK(version("11080") == "11.8");
    CHECK(version("12090") == "12.9");
    CHECK(version("13000") == "13.0");
    CHECK(version("9020") == "9.2");
  }
  SECTION("no device at all is an answer") {
    const auto none = gpu::parse_libcuda_report("loaded libcuda.so.1\ndevice_count 0\n");
    REQUIRE(none->gpus.has_value());
    CHECK(none->gpus->empty());
  }
  SECTION("a device list cut short is no answer") {
    const auto cut = gpu::parse_libcuda_report(
        "device_count 2\ndevice 0 8.0 NVIDIA A100-SXM4-40GB\n"
        "error cuDeviceGetName 999 CUDA_ERROR_UNKNOWN\n");
    CHECK_FALSE(cut->gpus.has_value());
    CHECK(cut->problems ==
          std::vector<std::string>{"cuDeviceGetName failed: CUDA_ERROR_UNKNOWN (999)"});
  }
  SECTION("a missing function") {
    CHECK(gpu::parse_libcuda_report("loaded libcuda.so.1\nmissing cuDeviceGetName\n")->problems ==
          std::vector<std::string>{"has no function cuDeviceGetName"});
  }
  SECTION("an empty report says nothing") {
    const auto empty = gpu::parse_libcuda_report("");
    CHECK_FALSE(empty->loaded);
    CHECK(empty->problems.empty());
  }
}

TEST_CASE("a libcuda report line not understood is refused", "[gpu]") {
  const auto message = [](std::string_view text) {
    const auto report = gpu::parse_libcuda_report(text);
    REQUIRE_FALSE(report.ok());
    return report.error().message() + ": " + report.error().causes().at(0);
  };
  CHECK(message("loaded x\nhello world\n") ==
        "libcuda report line 2 not understood: `hello world`: unknown key `hello`");
  CHECK(message("driver_version twelve\n") ==
        "libcuda report line 1 not understood: `driver_version twelve`: `twelve` is not a CUDA "
        "version number");
  CHECK(message("device 0 9.0 H100\n") ==
        "libcuda report line 1 not understood: `device 0 9.0 H100`: more devices than "
        "device_count");
  CHECK(message("device_count 2\ndevice 1 9.0 H100\n") ==
        "libcuda report line 2 not understood: `device 1 9.0 H100`: expected device 0");
  CHECK_THAT(message("device_count 1\ndevice 0 ninety H100\n"),
             Catch::StartsWith("libcuda report line 2 not understood: `device 0 ninety H100`: "));
  CHECK(message("error cuInit\n") ==
        "libcuda report line 1 not understood: `error cuInit`: expected `error <function> "
        "<code> [<name>]`");
}
