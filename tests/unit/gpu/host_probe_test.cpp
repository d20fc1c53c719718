#include "envkit/gpu/host_probe.hpp"

#include <catch2/catch.hpp>
#include <map>
#include <set>

namespace {

namespace gpu = envkit::gpu;
using envkit::specs::ComputeCapability;
using Kind = gpu::Provenance::Kind;

constexpr std::string_view kProcVersion =
    "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  535.129.03  Release Build  "
    "(dvs-builder@U16-T02-35-3)  Thu Oct 19 18:42:12 UTC 2023\n";
constexpr std::string_view kTwoGpus =
    "535.129.03, 8.0, NVIDIA A100-SXM4-40GB\n535.129.03, 8.6, NVIDIA RTX A6000\n";

// A machine described by plain values; records what the probe asked it.
struct FakeHost {
  std::map<std::string, std::string, std::less<>> variables;
  std::map<std::string, std::string> files;
  std::optional<envkit::sys::ProcessOutput> nvidia_smi;  // nullopt: not installed
  int nvidia_smi_runs = 0;
  std::optional<gpu::LibcudaReport> libcuda;  // nullopt: not installed
  int libcuda_runs = 0;
  std::vector<std::string> files_read;
  std::set<std::string> devices;  // paths that exist without content: /dev/dxg

  gpu::ProbeSources sources() {
    return {
        .variable = [this](const envkit::env::Variable& v) -> std::optional<std::string> {
          const auto it = variables.find(v.name);
          if (it == variables.end()) return std::nullopt;
          return it->second;
        },
        .read_file = [this](const std::filesystem::path& path) -> std::optional<std::string> {
          files_read.push_back(path.string());
          const auto it = files.find(path.string());
          if (it == files.end()) return std::nullopt;
          return it->second;
        },
        .query_nvidia_smi =
            [this]() {
              ++nvidia_smi_runs;
              return nvidia_smi;
            },
        .query_libcuda =
            [this]() {
              ++libcuda_runs;
              return libcuda;
            },
        .exists =
            [this](const std::filesystem::path& path) {
              return devices.contains(path.string()) || files.contains(path.string());
            },
    };
  }

  gpu::HostFacts probe() {
    auto facts = gpu::probe_host(sources());
    REQUIRE(facts.ok());
    return std::move(facts).value();
  }
};

envkit::sys::ProcessOutput smi_output(std::string out, int exit_code = 0) {
  envkit::sys::ProcessOutput output;
  output.exit_code = exit_code;
  output.out = std::move(out);
  return output;
}

gpu::LibcudaReport libcuda_report(std::string_view text) {
  auto report = gpu::parse_libcuda_report(text);
  REQUIRE(report.ok());
  return std::move(report).value();
}

constexpr std::string_view kLibcudaTwoGpus =
    "loaded libcuda.so.1\n"
    "driver_version 12040\n"
    "device_count 2\n"
    "device 0 9.0 NVIDIA H100 80GB HBM3\n"
    "device 1 9.0 NVIDIA H100 80GB HBM3\n";

}  // namespace

TEST_CASE("probe of a machine without NVIDIA driver or nvidia-smi", "[gpu]") {
  FakeHost host;
  const auto facts = host.probe();
  CHECK_FALSE(facts.driver.has_value());
  CHECK(facts.driver_source.kind == Kind::nothing_found);
  CHECK(facts.driver_source.to_string() ==
        "checked /sys/module/nvidia/version, /proc/driver/nvidia/version, nvidia-smi");
  CHECK_FALSE(facts.driver_cuda.has_value());
  CHECK(facts.driver_cuda_source.to_string() == "checked libcuda.so.1");
  CHECK(facts.gpus.empty());
  CHECK(facts.gpus_source.to_string() == "checked libcuda.so.1, nvidia-smi");
  CHECK(facts.notes.empty());
  // And, with no kernel module's file, whether this is WSL (it is not).
  CHECK(host.files_read == std::vector<std::string>{"/sys/module/nvidia/version",
                                                    "/proc/driver/nvidia/version",
                                                    "/proc/version"});
  CHECK_FALSE(facts.wsl.has_value());
  CHECK(host.libcuda_runs == 1);
  CHECK(host.nvidia_smi_runs == 1);
}

TEST_CASE("probe takes the driver from /proc and the GPUs from nvidia-smi", "[gpu]") {
  FakeHost host;
  host.files["/proc/driver/nvidia/version"] = kProcVersion;
  host.nvidia_smi = smi_output(std::string(kTwoGpus));
  const auto facts = host.probe();
  REQUIRE(facts.driver.has_value());
  CHECK(facts.driver->original() == "535.129.03");
  CHECK(facts.driver_source.kind == Kind::proc_file);
  CHECK(facts.driver_source.to_string() == "/proc/driver/nvidia/version");
  REQUIRE(facts.gpus.size() == 2);
  CHECK(facts.gpus[0].name == "NVIDIA A100-SXM4-40GB");
  CHECK(facts.gpus[0].compute_capability == ComputeCapability{8, 0});
  CHECK(facts.gpus[1].compute_capability == ComputeCapability{8, 6});
  CHECK(facts.gpus_source.to_string() == "nvidia-smi");
}

TEST_CASE("probe reads the /proc file named by ENVKIT_PROC_DRIVER_VERSION", "[gpu]") {
  FakeHost host;
  host.variables["ENVKIT_PROC_DRIVER_VERSION"] = "/tmp/fake-version";
  host.files["/tmp/fake-version"] = kProcVersion;
  const auto facts = host.probe();
  CHECK(host.files_read ==
        std::vector<std::string>{"/sys/module/nvidia/version", "/tmp/fake-version"});
  CHECK(facts.driver->original() == "535.129.03");
  CHECK(facts.driver_source.to_string() == "/tmp/fake-version");
}

TEST_CASE("probe takes the driver from /sys/module/nvidia/version before /proc", "[gpu]") {
  FakeHost host;
  host.files["/sys/module/nvidia/version"] = "550.54.15\n";
  host.files["/proc/driver/nvidia/version"] = kProcVersion;
  const auto facts = host.probe();
  CHECK(facts.driver->original() == "550.54.15");
  CHECK(facts.driver_source.kind == Kind::sys_file);
  CHECK(facts.driver_source.to_string() == "/sys/module/nvidia/version");
  CHECK(host.files_read == std::vector<std::string>{"/sys/module/nvidia/version"});
  CHECK(facts.notes.empty());

  SECTION("or from the file named by ENVKIT_SYS_DRIVER_VERSION") {
    host.variables["ENVKIT_SYS_DRIVER_VERSION"] = "/tmp/fake-sys-version";
    host.files["/tmp/fake-sys-version"] = "570.195.03\n";
    host.files_read.clear();
    const auto redirected = host.probe();
    CHECK(redirected.driver->original() == "570.195.03");
    CHECK(redirected.driver_source.to_string() == "/tmp/fake-sys-version");
    CHECK(host.files_read == std::vector<std::string>{"/tmp/fake-sys-version"});
  }
  SECTION("unless it does not hold a version, which leaves a note") {
    host.files["/sys/module/nvidia/version"] = "\n";
    const auto from_proc = host.probe();
    CHECK(from_proc.driver->original() == "535.129.03");
    CHECK(from_proc.driver_source.kind == Kind::proc_file);
    CHECK(from_proc.notes == std::vector<std::string>{"/sys/module/nvidia/version: empty"});
  }
}

TEST_CASE("probe takes the driver's CUDA and the GPUs from libcuda before nvidia-smi", "[gpu]") {
  FakeHost host;
  host.libcuda = libcuda_report(kLibcudaTwoGpus);
  host.nvidia_smi = smi_output(std::string(kTwoGpus));
  const auto facts = host.probe();
  REQUIRE(facts.driver_cuda.has_value());
  CHECK(facts.driver_cuda->original() == "12.4");
  CHECK(facts.driver_cuda_source.kind == Kind::libcuda);
  CHECK(facts.driver_cuda_source.to_string() == "libcuda.so.1");
  REQUIRE(facts.gpus.size() == 2);
  CHECK(facts.gpus[1].name == "NVIDIA H100 80GB HBM3");
  CHECK(facts.gpus[1].compute_capability == ComputeCapability{9, 0});
  CHECK(facts.gpus_source.to_string() == "libcuda.so.1");
  // libcuda does not know the kernel module's version: nvidia-smi is still asked for it.
  CHECK(facts.driver->original() == "535.129.03");
  CHECK(facts.driver_source.kind == Kind::nvidia_smi);
  CHECK(facts.notes.empty());

  SECTION("and nvidia-smi is not run once the files gave the driver") {
    host.files["/sys/module/nvidia/version"] = "550.54.15\n";
    const auto settled = host.probe();
    CHECK(settled.driver_source.kind == Kind::sys_file);
    CHECK(host.nvidia_smi_runs == 1);  // the first probe only
  }
}

TEST_CASE("a libcuda that fails cuInit leaves a note and nvidia-smi gives the GPUs", "[gpu]") {
  FakeHost host;
  host.libcuda = libcuda_report(
      "loaded libcuda.so.1\ndriver_version 12040\nerror cuInit 100 CUDA_ERROR_NO_DEVICE\n");
  host.nvidia_smi = smi_output(std::string(kTwoGpus));
  const auto facts = host.probe();
  CHECK(facts.driver_cuda->original() == "12.4");
  CHECK(facts.gpus.size() == 2);
  CHECK(facts.gpus_source.kind == Kind::nvidia_smi);
  CHECK(facts.notes ==
        std::vector<std::string>{"libcuda.so.1: cuInit failed: CUDA_ERROR_NO_DEVICE (100)"});

  SECTION("and with no nvidia-smi either, there are no GPUs") {
    host.nvidia_smi.reset();
    const auto none = host.probe();
    CHECK(none.gpus.empty());
    CHECK(none.gpus_source.to_string() == "checked libcuda.so.1, nvidia-smi");
  }
}

TEST_CASE("probe takes the driver from nvidia-smi when /proc has none", "[gpu]") {
  FakeHost host;
  host.nvidia_smi = smi_output("550.54.15, 9.0, NVIDIA H100 80GB HBM3\n");
  const auto facts = host.probe();
  CHECK(facts.driver->original() == "550.54.15");
  CHECK(facts.driver_source.kind == Kind::nvidia_smi);
  REQUIRE(facts.gpus.size() == 1);
  CHECK(facts.gpus[0].name == "NVIDIA H100 80GB HBM3");
}

TEST_CASE("overrides win and keep the probe from asking the machine", "[gpu]") {
  FakeHost host;
  host.files["/proc/driver/nvidia/version"] = kProcVersion;
  host.nvidia_smi = smi_output(std::string(kTwoGpus));
  host.variables["ENVKIT_OVERRIDE_DRIVER"] = "550.54.15";
  host.variables["ENVKIT_OVERRIDE_CUDA_ARCH"] = "8.0,9.0";
  const auto facts = host.probe();
  CHECK(facts.driver->original() == "550.54.15");
  CHECK(facts.driver_source.to_string() == "ENVKIT_OVERRIDE_DRIVER");
  REQUIRE(facts.gpus.size() == 2);
  CHECK_FALSE(facts.gpus[0].name.has_value());
  CHECK(facts.gpus[1].compute_capability == ComputeCapability{9, 0});
  CHECK(facts.gpus_source.to_string() == "ENVKIT_OVERRIDE_CUDA_ARCH");
  CHECK_FALSE(facts.driver_cuda.has_value());
  CHECK(facts.driver_cuda_source.to_string() == "ENVKIT_OVERRIDE_DRIVER");
  CHECK(host.files_read.empty());
  CHECK(host.nvidia_smi_runs == 0);
  CHECK(host.libcuda_runs == 0);
}

TEST_CASE("each fact comes from its own first source", "[gpu]") {
  FakeHost host;
  host.nvidia_smi = smi_output(std::string(kTwoGpus));
  host.variables["ENVKIT_OVERRIDE_DRIVER"] = "550.54.15";
  const auto facts = host.probe();
  CHECK(facts.driver_source.kind == Kind::override_variable);
  CHECK(facts.gpus.size() == 2);
  CHECK(facts.gpus_source.kind == Kind::nvidia_smi);
  CHECK(host.files_read.empty());

  SECTION("and the machine's libcuda does not speak for an assumed driver") {
    host.libcuda = libcuda_report(kLibcudaTwoGpus);
    const auto with_libcuda = host.probe();
    CHECK(with_libcuda.gpus_source.kind == Kind::libcuda);
    CHECK_FALSE(with_libcuda.driver_cuda.has_value());
    CHECK(with_libcuda.driver_cuda_source.kind == Kind::override_variable);
  }
}

TEST_CASE("a driver override of none means no GPU either", "[gpu]") {
  FakeHost host;
  host.nvidia_smi = smi_output(std::string(kTwoGpus));
  host.variables["ENVKIT_OVERRIDE_DRIVER"] = "none";
  auto facts = host.probe();
  CHECK_FALSE(facts.driver.has_value());
  CHECK(facts.driver_source.to_string() == "ENVKIT_OVERRIDE_DRIVER");
  CHECK(facts.gpus.empty());
  CHECK(facts.gpus_source.to_string() == "ENVKIT_OVERRIDE_DRIVER");
  CHECK(host.nvidia_smi_runs == 0);
  CHECK(host.libcuda_runs == 0);

  SECTION("unless the arch override names some") {
    host.variables["ENVKIT_OVERRIDE_CUDA_ARCH"] = "7.0";
    facts = host.probe();
    REQUIRE(facts.gpus.size() == 1);
    CHECK(facts.gpus_source.to_string() == "ENVKIT_OVERRIDE_CUDA_ARCH");
  }
}

TEST_CASE("a failing nvidia-smi leaves a note, not an error", "[gpu]") {
  FakeHost host;
  host.nvidia_smi = smi_output(
      "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure "
      "that the latest NVIDIA driver is installed and running.\n\n",
      9);
  const auto facts = host.probe();
  CHECK_FALSE(facts.driver.has_value());
  CHECK(facts.driver_source.kind == Kind::nothing_found);
  CHECK(
      facts.notes ==
      std::vector<std::string>{
          "nvidia-smi exited with 9: NVIDIA-SMI has failed because it couldn't communicate with "
          "the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running."});

  SECTION("and so does one that hangs") {
    host.nvidia_smi = smi_output("", 137);
    host.nvidia_smi->timed_out = true;
    CHECK(host.probe().notes == std::vector<std::string>{"nvidia-smi did not answer within 5 s"});
  }
  SECTION("and so does unreadable output") {
    host.nvidia_smi = smi_output("garbage\n");
    CHECK(host.probe().notes ==
          std::vector<std::string>{"nvidia-smi line 1 is not a GPU: `garbage`: expected "
                                   "`driver_version, compute_cap, name`"});
  }
}

TEST_CASE("an unreadable /proc version file leaves a note and the probe goes on", "[gpu]") {
  FakeHost host;
  host.files["/proc/driver/nvidia/version"] = "something else\n";
  host.nvidia_smi = smi_output("550.54.15, 9.0, NVIDIA H100 80GB HBM3\n");
  const auto facts = host.probe();
  CHECK(facts.driver_source.kind == Kind::nvidia_smi);
  CHECK(facts.notes ==
        std::vector<std::string>{"/proc/driver/nvidia/version: no `NVRM version:` line"});
}

TEST_CASE("the probe does without a libcuda source it was not given", "[gpu]") {
  FakeHost host;
  host.nvidia_smi = smi_output(std::string(kTwoGpus));
  auto sources = host.sources();
  sources.query_libcuda = nullptr;
  const auto facts = gpu::probe_host(sources);
  REQUIRE(facts.ok());
  CHECK(facts->gpus_source.kind == Kind::nvidia_smi);
}

TEST_CASE("a malformed override is an input error", "[gpu]") {
  FakeHost host;
  host.variables["ENVKIT_OVERRIDE_CUDA_ARCH"] = "ampere";
  const auto facts = gpu::probe_host(host.sources());
  REQUIRE_FALSE(facts.ok());
  CHECK(facts.error().exit_code() == 2);
  CHECK(facts.error().message() ==
        "`ENVKIT_OVERRIDE_CUDA_ARCH` is not a list of compute capabilities: `ampere`");
}

// /proc/version of Ubuntu 22.04 under WSL 2, and of WSL 1 (whose kernel is Windows' own).
constexpr std::string_view kWsl2ProcVersion =
    "Linux version 5.15.153.1-microsoft-standard-WSL2 (root@941d701f84f1) (gcc (GCC) 11.2.0, GNU "
    "ld (GNU Binutils) 2.37) #1 SMP Fri Mar 29 23:14:13 UTC 2024\n";
constexpr std::string_view kWsl1ProcVersion =
    "Linux version 4.4.0-19041-Microsoft (Microsoft@Microsoft.com) (gcc version 5.4.0 (GCC) ) "
    "#1237-Microsoft Sat Sep 11 14:32:00 PST 2021\n";
constexpr std::string_view kUbuntuProcVersion =
    "Linux version 6.8.0-45-generic (buildd@lcy02-amd64-115) (x86_64-linux-gnu-gcc-13 (Ubuntu "
    "13.2.0-23ubuntu4) 13.2.0, GNU ld (GNU Binutils for Ubuntu) 2.42) #45-Ubuntu SMP "
    "PREEMPT_DYNAMIC Fri Aug 30 12:02:04 UTC 2024\n";

TEST_CASE("WSL is told by its kernel's name or by /dev/dxg", "[gpu][wsl]") {
  const auto wsl2 = gpu::detect_wsl(std::string(kWsl2ProcVersion), true);
  REQUIRE(wsl2.has_value());
  CHECK(wsl2->gpu_device);
  CHECK_THAT(wsl2->evidence, Catch::Contains("/proc/version"));

  const auto wsl1 = gpu::detect_wsl(std::string(kWsl1ProcVersion), false);
  REQUIRE(wsl1.has_value());
  CHECK_FALSE(wsl1->gpu_device);

  // A kernel of its own (a custom WSL kernel) still has the device.
  const auto device_only = gpu::detect_wsl(std::string(kUbuntuProcVersion), true);
  REQUIRE(device_only.has_value());
  CHECK(device_only->evidence == "/dev/dxg exists");

  CHECK_FALSE(gpu::detect_wsl(std::string(kUbuntuProcVersion), false).has_value());
  CHECK_FALSE(gpu::detect_wsl(std::nullopt, false).has_value());
}

TEST_CASE("probe of WSL 2: the Windows driver through nvidia-smi, no kernel module", "[gpu][wsl]") {
  FakeHost host;
  host.files["/proc/version"] = kWsl2ProcVersion;
  host.devices.insert("/dev/dxg");
  host.nvidia_smi = smi_output("566.36, 8.9, NVIDIA GeForce RTX 4070\n");
  const auto facts = host.probe();
  REQUIRE(facts.wsl.has_value());
  CHECK(facts.wsl->gpu_device);
  REQUIRE(facts.driver.has_value());
  CHECK(facts.driver->original() == "566.36");
  CHECK(facts.driver_source.kind == Kind::nvidia_smi);
  REQUIRE(facts.gpus.size() == 1);
  CHECK(facts.gpus[0].compute_capability == ComputeCapability{8, 9});
}

TEST_CASE("a machine with the nvidia kernel module is not asked whether it is WSL", "[gpu][wsl]") {
  FakeHost host;
  host.files["/sys/module/nvidia/version"] = "550.54.15\n";
  host.files["/proc/version"] = kWsl2ProcVersion;  // not read: the module answers
  host.devices.insert("/dev/dxg");
  const auto facts = host.probe();
  CHECK_FALSE(facts.wsl.has_value());
  CHECK(host.files_read == std::vector<std::string>{"/sys/module/nvidia/version"});
}
