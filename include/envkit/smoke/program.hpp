#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "envkit/core/result.hpp"

// Running the compiled smoke program and reading its one JSON object
// (share/envkit/smoke/README.md has the contract).
namespace envkit::smoke {

// The program's exit statuses.
inline constexpr int kExitPass = 0;
inline constexpr int kExitFail = 1;
inline constexpr int kExitSkip = 77;

// The program's JSON, field for field; null fields are nullopt.
struct ProgramReport {
  std::string status;  // pass, fail or skip
  std::string reason;
  std::optional<std::string> gpu;
  std::optional<std::string> compute_capability;
  std::optional<std::string> driver;  // the CUDA version the driver supports
  std::optional<std::string> cuda_runtime;
  std::optional<std::string> cudnn;
  std::optional<long> steps;
  std::optional<double> loss_first;
  std::optional<double> loss_last;
  std::optional<double> accuracy;
  std::optional<double> max_reference_error;
  std::optional<double> gpu_seconds;
  std::optional<double> cpu_seconds;
  // envkit-smoke only (the NVRTC build): what it checked before any kernel ran.
  struct Library {
    std::string path;
    bool in_prefix = false;
    bool driver = false;  // libcuda and the driver's own libraries: the machine's by design
  };
  std::vector<Library> libraries;       // every CUDA library the program mapped
  std::vector<std::string> kernels;     // the targets NVRTC compiled for: sm_86, sm_90
  std::vector<std::string> deferred;    // libraries that wait for the driver: "path: why"
  std::optional<std::string> versions;  // "NVRTC 12.4, cuBLAS 12.4.5, cuDNN 9.1.0 (for CUDA 12.2)"
  std::optional<std::string> compiler;  // "nvrtc"; absent for the nvcc build
  std::optional<std::string> gpu_uuid;  // hex, where the driver gave it
};

// Reads the program's stdout: exactly one JSON object with a `status` of pass,
// fail or skip. Anything else is an error saying what was wrong.
[[nodiscard]] Result<ProgramReport> parse_report(std::string_view output);

// CPU reference time over GPU time, where both are known and the GPU's is not zero.
[[nodiscard]] std::optional<double> speedup(const ProgramReport& report);

// The report for people, one line each: device, versions, training, timing, verdict.
[[nodiscard]] std::vector<std::string> summary_lines(const ProgramReport& report);

struct ProgramOptions {
  std::vector<std::string> arguments;  // the program's own, before the common ones
  std::optional<long> steps;
  std::optional<unsigned long long> seed;
  bool cpu_only = false;
  // The prefix's environment, as changes to this process's.
  std::map<std::string, std::optional<std::string>> environment;
  std::chrono::milliseconds timeout{std::chrono::minutes(10)};
};

struct ProgramRun {
  int exit_code = -1;  // 0, 1 or 77
  ProgramReport report;
  std::string json;      // the object exactly as the program printed it
  std::string progress;  // its stderr: the `smoke: ...` lines
};

// Runs `binary --json` with the options. A program that crashes, hangs, exits
// with another status or prints no valid JSON is ErrorCode::failed, with the
// end of its stderr.
[[nodiscard]] Result<ProgramRun> run_program(const std::filesystem::path& binary,
                                             const ProgramOptions& options);

}  // namespace envkit::smoke
