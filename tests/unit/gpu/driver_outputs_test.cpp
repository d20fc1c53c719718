#include <catch2/catch.hpp>

#include "envkit/gpu/host_probe.hpp"
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
