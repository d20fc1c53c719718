#pragma once

// The smoke network on the GPU through the driver API: the same network, data and launches as
// smoke.cu's GpuNet, with kernels compiled by NVRTC (kernel_compiler.hpp) and cuDNN and cuBLAS
// from the prefix sharing the device's primary context.
#include <memory>

#include "smoke_model.hpp"
#include "stack.hpp"

namespace envkit_smoke {

// A device, its primary context current on this thread, and the error texts of its driver.
struct Device {
  const abi::Driver* driver = nullptr;
  abi::CUdevice device = 0;
  // Throws SetupError naming the call and the driver's error name and text.
  void check(abi::CUresult result, const char* call) const;
};

class GpuNet {
 public:
  // Uploads the data and the initial weights; loads `image` (CUBIN or PTX of the kernels).
  GpuNet(const Device& device, const Stack& stack, const std::string& image, const Dataset& data,
         const Params<float>& init);
  ~GpuNet();
  GpuNet(const GpuNet&) = delete;
  GpuNet& operator=(const GpuNet&) = delete;

  void forward_backward(int start);
  void sgd(float learning_rate);
  [[nodiscard]] double batch_loss() const;  // of the last forward
  [[nodiscard]] Params<float> gradients() const;
  [[nodiscard]] Evaluation evaluate(const Dataset& data);
  // Seconds the device takes for `steps` training steps (CUDA events around them).
  [[nodiscard]] double train(int steps);

 private:
  struct State;
  void forward(int start);
  std::unique_ptr<State> state_;
};

}  // namespace envkit_smoke
