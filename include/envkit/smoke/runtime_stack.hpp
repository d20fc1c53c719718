#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "envkit/core/result.hpp"
#include "envkit/specs/platform.hpp"

// The smoke test without a compiler (docs/smoke.md): envkit-smoke opens the prefix's NVRTC,
// cuDNN and cuBLAS by path, compiles the kernels with NVRTC and launches them through the
// driver API. Used wherever the prefix's NVRTC is 11.2 or newer; older stacks build smoke.cu
// with their own nvcc (build.hpp).
namespace envkit::smoke {

// The libraries envkit-smoke opens, all in the prefix's lib/.
struct RuntimeStack {
  std::filesystem::path nvrtc;   // libnvrtc.so.12, libnvrtc.so.11.2
  std::filesystem::path cudnn;   // libcudnn.so.9
  std::filesystem::path cublas;  // libcublas.so.12
  // Opened first, so that what cuDNN and cuBLAS open later is already the prefix's:
  // cuDNN's sub-libraries (libcudnn_cnn.so.9, ...) and libcublasLt.
  std::vector<std::filesystem::path> also;
};

// The runtime stack of the prefix, or nullopt where its lib/ has no NVRTC 11.2 or newer (then
// nvcc builds the program). An NVRTC without cuDNN or cuBLAS beside it is an error naming what
// is missing and how to get it.
[[nodiscard]] Result<std::optional<RuntimeStack>> find_runtime_stack(
    const std::filesystem::path& prefix);

// envkit-smoke: beside the envkit binary (a build tree), else in ../libexec/envkit/.
[[nodiscard]] Result<std::filesystem::path> runner_path();

struct RunnerRequest {
  std::filesystem::path prefix;
  std::filesystem::path kernels;  // sources_dir() / "kernels.cuh"
  RuntimeStack stack;
  // Compiled for each, GPU or not: the lock's GPUs and the machine's.
  std::vector<specs::ComputeCapability> capabilities;
  std::string expect_cuda;  // the installed versions (receipts); "" where none is installed
  std::string expect_cudnn;
  std::optional<std::string> no_gpu;  // envkit's probe found none: why (the program skips)
};

// envkit-smoke's arguments for `request`, before the common --json/--steps/--seed/--cpu-only.
[[nodiscard]] std::vector<std::string> runner_arguments(const RunnerRequest& request);

}  // namespace envkit::smoke
