#pragma once

// Compiling the smoke program's kernels (kernels.cuh) with the prefix's NVRTC: SASS for a real
// GPU architecture, PTX for a virtual one. Needs no GPU.
#include <optional>
#include <string>
#include <vector>

#include "stack.hpp"

namespace envkit_smoke {

// 86 for compute capability 8.6 (as CUDA numbers its targets).
using Arch = int;

struct CompiledKernels {
  Arch arch = 0;
  bool sass = true;   // false: PTX (NVRTC older than 11.1 has no CUBIN)
  std::string image;  // what cuModuleLoadData takes
  [[nodiscard]] std::string target() const {
    return (sass ? "sm_" : "compute_") + std::to_string(arch);
  }
};

// Compiles `source` for `arch`; throws SetupError with NVRTC's log, and the architectures this
// NVRTC supports where it can say.
[[nodiscard]] CompiledKernels compile_kernels(const abi::Nvrtc& nvrtc, const std::string& source,
                                              Arch arch);

// The oldest real architecture this NVRTC compiles for (11.2 and later say), else nullopt.
[[nodiscard]] std::optional<Arch> oldest_supported_arch(const abi::Nvrtc& nvrtc);

// "8.6" -> 86; throws SetupError for anything else.
[[nodiscard]] Arch parse_arch(const std::string& text);
[[nodiscard]] std::string arch_text(Arch arch);  // 86 -> "8.6"

}  // namespace envkit_smoke
