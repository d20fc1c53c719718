#pragma once

#include <stdexcept>

namespace envkit_smoke {

// The stack cannot be set up or does not work: a library that will not load or lacks a function,
// versions that disagree, NVRTC refusing the program, a failing CUDA, cuDNN or cuBLAS call. The
// smoke test fails (exit 1) with this text as its reason.
struct SetupError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace envkit_smoke
