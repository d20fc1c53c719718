#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "envkit/core/result.hpp"
#include "envkit/smoke/program.hpp"

// The record of a passing GPU smoke test, `.envkit/verified.json` beside the prefix: which lock
// trained on which GPU and driver, with which libraries, how fast (docs/smoke.md). `envkit list`
// and doctor show it; `envkit export --oci` puts it in the image's labels.
namespace envkit::smoke {

struct Verified {
  std::string lock_sha256;  // of envkit.lock's bytes when the test passed ("" without a lock)
  std::string verified_at;  // UTC, 2026-11-29T05:20:00Z
  std::string gpu;
  std::string compute_capability;
  std::string gpu_uuid_sha256;  // a hash, not the UUID itself ("" where the program had none)
  std::string driver;           // the CUDA version the driver supports
  std::string libraries;        // "NVRTC 12.4, cuBLAS 12.4.5, cuDNN 9.1.0 (built for CUDA 12.2)"
  std::vector<std::string> loaded;  // every CUDA library the program mapped, by path
  double gpu_seconds = 0;
  double cpu_seconds = 0;
  std::optional<double> speedup;
  long steps = 0;
};

// <prefix>/../verified.json: .envkit/verified.json for the project's own prefix.
[[nodiscard]] std::filesystem::path verified_path(const std::filesystem::path& prefix);

// The record of `report` (a passing run on a GPU); the GPU's UUID is kept only as its sha256.
[[nodiscard]] Verified verified_from(const ProgramReport& report, std::string lock_sha256,
                                     std::string verified_at);

// Writes it (a temporary file renamed into place).
[[nodiscard]] Result<void> write_verified(const std::filesystem::path& prefix,
                                          const Verified& verified);

// The record beside `prefix`, if any; a damaged one is an error naming the file.
[[nodiscard]] Result<std::optional<Verified>> read_verified(const std::filesystem::path& prefix);

// "passed on NVIDIA H200 (compute capability 9.0), driver CUDA 13.0, 2026-11-29T05:20:00Z:
// 200 steps 14.2x faster than the CPU reference"
[[nodiscard]] std::string describe(const Verified& verified);

// The sha256 of the lock file's bytes ("" where it cannot be read).
[[nodiscard]] std::string lock_sha256(const std::filesystem::path& lock_path);

}  // namespace envkit::smoke
