#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "envkit/core/result.hpp"
#include "envkit/gpu/host_facts.hpp"
#include "envkit/specs/version.hpp"

namespace envkit::gpu {

// The CUDA driver library, as dlopen finds it (the driver installs it; the toolkit
// only has a stub).
inline constexpr std::string_view kLibcuda = "libcuda.so.1";
// cuInit takes a few seconds on a machine with many GPUs and no persistence
// daemon; a wedged driver makes it hang for good.
inline constexpr std::chrono::seconds kLibcudaTimeout{15};

// What the CUDA driver library told the probe's child process.
//
// The child reports one fact per line, `<key> <value>`; the parent parses that
// text (parse_libcuda_report), so the format is tested without a driver:
//
//   loaded libcuda.so.1                 dlopen succeeded
//   not_loaded <dlerror()>              dlopen failed; nothing follows
//   missing <symbol>                    dlsym found no such function; nothing follows
//   driver_version 12040                cuDriverGetVersion (asked before cuInit)
//   device_count 2                      cuDeviceGetCount, after cuInit(0) succeeded
//   device 0 9.0 NVIDIA H100 80GB HBM3  per device: index, compute capability, name
//   error cuInit 100 CUDA_ERROR_NO_DEVICE
//                                       a call that failed: its CUresult and, when the
//                                       library has cuGetErrorName, its name
struct LibcudaReport {
  bool loaded = false;                        // dlopen succeeded
  std::string library;                        // what was loaded, as dlopen was given it
  std::string load_error;                     // dlerror() when it did not
  std::optional<specs::Version> driver_cuda;  // 12040 -> `12.4`
  // Every device with its name; nullopt unless cuInit and every device query succeeded.
  std::optional<std::vector<Gpu>> gpus;
  // What went wrong, for the probe's notes: `cuInit failed: CUDA_ERROR_NO_DEVICE (100)`.
  std::vector<std::string> problems;
};

// The child's report, as above. Fails on a line it does not understand.
[[nodiscard]] Result<LibcudaReport> parse_libcuda_report(std::string_view text);

// Loads `library` with dlopen in a child process (fork, no exec), asks it the
// driver's CUDA version and every device's name and compute capability, and
// parses the report. A child that does not finish within `timeout` (a wedged
// driver) is killed; what it had reported is kept, and a problem says so. Nullopt
// when the library is not installed; any other failure is a problem in the report.
[[nodiscard]] std::optional<LibcudaReport> query_libcuda(
    const std::string& library = std::string(kLibcuda),
    std::chrono::milliseconds timeout = kLibcudaTimeout);

}  // namespace envkit::gpu
