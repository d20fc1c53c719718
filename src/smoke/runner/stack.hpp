#pragma once

// The prefix's CUDA stack as envkit-smoke uses it: NVRTC, cuDNN and cuBLAS opened by path, their
// versions, and the checks that they belong together.
#include <optional>
#include <string>
#include <vector>

#include "cuda_abi.hpp"
#include "libraries.hpp"

namespace envkit_smoke {

// "12.4" / "9.1.0": what a library says of itself.
struct StackVersions {
  std::string nvrtc;       // nvrtcVersion: the CUDA release of the prefix's NVRTC
  std::string cublas;      // cublasGetProperty
  std::string cudnn;       // cudnnGetVersion
  std::string cudnn_cuda;  // cudnnGetCudartVersion: the CUDA release cuDNN was built for
  int nvrtc_major = 0, cublas_major = 0, cudnn_cuda_major = 0;
};

struct Stack {
  // `also` libraries that need the NVIDIA driver's libcuda.so.1 where the machine has none
  // (cuDNN 9's runtime-compiled engines): "path: why", opened by cuDNN on a GPU machine.
  std::vector<std::string> deferred;
  abi::Nvrtc nvrtc{};
  abi::Cudnn cudnn{};
  abi::Cublas cublas{};
  StackVersions versions;
};

struct StackPaths {
  std::string nvrtc, cudnn, cublas;
  std::vector<std::string> also;  // loaded first: cuDNN's sub-libraries, cuBLASLt
};

// Opens the libraries by path and binds every function; throws SetupError naming the file and
// the missing functions.
[[nodiscard]] Stack open_stack(const StackPaths& paths);

// What the lock says is installed: "12.4.1", "9.1.0.70"; empty where unknown.
struct Expected {
  std::string cuda;
  std::string cudnn;
};

// The disagreements between the libraries, and with the lock: empty when they agree.
[[nodiscard]] std::vector<std::string> version_problems(const StackVersions& versions,
                                                        const Expected& expected);

// 12040 -> "12.4" (cudaDriverGetVersion and friends).
[[nodiscard]] std::string cuda_version_text(int version);
// cuDNN 9 encodes major*10000 + minor*100 + patch, cuDNN 8 and older major*1000 + minor*100 +
// patch.
[[nodiscard]] std::string cudnn_version_text(std::size_t version);

}  // namespace envkit_smoke
