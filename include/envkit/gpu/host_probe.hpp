#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "envkit/core/env_vars.hpp"
#include "envkit/core/result.hpp"
#include "envkit/gpu/host_facts.hpp"
#include "envkit/gpu/libcuda_probe.hpp"
#include "envkit/specs/platform.hpp"
#include "envkit/specs/version.hpp"
#include "envkit/sys/process.hpp"

namespace envkit::gpu {

// The kernel module's version, alone on one line: `550.54.15`.
inline constexpr std::string_view kSysDriverVersionPath = "/sys/module/nvidia/version";
inline constexpr std::string_view kProcDriverVersionPath = "/proc/driver/nvidia/version";
// The kernel's version string: WSL's kernels name Microsoft (`5.15.153.1-microsoft-standard-WSL2`).
inline constexpr std::string_view kProcVersionPath = "/proc/version";
// WSL 2's GPU device (the Windows driver's paravirtualized GPU), instead of /dev/nvidia*.
inline constexpr std::string_view kWslGpuDevice = "/dev/dxg";
// Where WSL mounts the Windows driver's Linux side: libcuda.so.1 and nvidia-smi.
inline constexpr std::string_view kWslLibDir = "/usr/lib/wsl/lib";
// The nvidia-smi query the probe runs; one CSV line per GPU:
// `550.54.15, 9.0, NVIDIA H100 80GB HBM3`.
inline constexpr std::string_view kNvidiaSmiQuery[] = {
    "nvidia-smi", "--query-gpu=driver_version,compute_cap,name", "--format=csv,noheader"};

// Everything the probe reads from the world, so tests can hand it fakes.
struct ProbeSources {
  // An environment variable's value; nullopt when unset.
  std::function<std::optional<std::string>(const env::Variable&)> variable;
  // A whole file; nullopt when it does not exist or cannot be read.
  std::function<std::optional<std::string>(const std::filesystem::path&)> read_file;
  // Runs kNvidiaSmiQuery; nullopt when nvidia-smi is not installed or cannot start.
  std::function<std::optional<sys::ProcessOutput>()> query_nvidia_smi;
  // Asks libcuda.so.1 (query_libcuda); nullopt when it is not installed. Left
  // empty, the probe does without it.
  std::function<std::optional<LibcudaReport>()> query_libcuda;
  // Whether a path (a device such as /dev/dxg) exists; left empty, nothing does.
  std::function<bool(const std::filesystem::path&)> exists;
};

// The real machine: the process environment, the filesystem, libcuda.so.1 in a
// child process and nvidia-smi on PATH (each given a few seconds: a wedged driver
// can make them hang); where those are not found, WSL's copies under
// /usr/lib/wsl/lib (not always on the loader's path or PATH). ENVKIT_LIBCUDA and
// ENVKIT_NVIDIA_SMI name others instead (a path that does not exist: none), so
// tests never see the machine's driver.
//
// `root` is the filesystem the files, devices and WSL's folder are read under
// (tests hand it a fake tree). Any root but `/` is not this machine's: the
// loader's own libcuda.so.1 and PATH are then not asked.
[[nodiscard]] ProbeSources host_sources(const std::filesystem::path& root = "/");

// Each fact from the first source that knows it:
//   driver:       ENVKIT_OVERRIDE_DRIVER, /sys/module/nvidia/version,
//                 /proc/driver/nvidia/version, nvidia-smi
//   driver_cuda:  ENVKIT_OVERRIDE_DRIVER, libcuda.so.1
//   GPUs:         ENVKIT_OVERRIDE_CUDA_ARCH, ENVKIT_OVERRIDE_DRIVER=none, libcuda.so.1, nvidia-smi
// An override of `none` for the driver means a machine with no usable GPU, so GPUs
// then come only from ENVKIT_OVERRIDE_CUDA_ARCH. A driver override also settles
// driver_cuda (unknown for a version): this machine's libcuda speaks for its own
// driver, not the one assumed. A source that fails leaves a note and the next is
// asked. Where no driver override and no kernel module's file names the driver,
// WSL is told by /proc/version and /dev/dxg (detect_wsl). Fails only on a
// malformed override.
[[nodiscard]] Result<HostFacts> probe_host(const ProbeSources& sources = host_sources());

// WSL from /proc/version's text (nullopt: unreadable) and whether /dev/dxg
// exists: a kernel that names Microsoft or WSL (any case), or the device.
[[nodiscard]] std::optional<Wsl> detect_wsl(const std::optional<std::string>& proc_version,
                                            bool dxg_exists);

// ENVKIT_OVERRIDE_DRIVER: a driver version, or `none` (nullopt) for no driver.
[[nodiscard]] Result<std::optional<specs::Version>> parse_driver_override(std::string_view text);

// ENVKIT_OVERRIDE_CUDA_ARCH: comma-separated capabilities (`8.0,9.0`, `sm_86`);
// empty means no GPU.
[[nodiscard]] Result<std::vector<specs::ComputeCapability>> parse_cuda_arch_override(
    std::string_view text);

// The driver version in /sys/module/nvidia/version: the whole file, `550.54.15\n`.
[[nodiscard]] Result<specs::Version> parse_sys_driver_version(std::string_view text);

// The driver version in /proc/driver/nvidia/version, from its `NVRM version:`
// line (proprietary and open kernel modules both).
[[nodiscard]] Result<specs::Version> parse_proc_driver_version(std::string_view text);

// One GPU as nvidia-smi reports it for kNvidiaSmiQuery.
struct SmiGpu {
  specs::Version driver;
  specs::ComputeCapability compute_capability;
  std::string name;
};

// The output of `nvidia-smi` with kNvidiaSmiQuery, one GPU per line.
[[nodiscard]] Result<std::vector<SmiGpu>> parse_nvidia_smi_query(std::string_view output);

}  // namespace envkit::gpu
