#include "gpu_net.hpp"

#include <algorithm>
#include <vector>

#include "setup_error.hpp"

namespace envkit_smoke {

namespace {

constexpr unsigned kThreads = 256;

unsigned blocks_for(std::size_t count) {
  return static_cast<unsigned>((count + kThreads - 1) / kThreads);
}

std::size_t act_size() {
  return static_cast<std::size_t>(kBatchSize) * kFeatures;
}

}  // namespace

void Device::check(abi::CUresult result, const char* call) const {
  if (result == abi::CUDA_SUCCESS) return;
  const char* name = nullptr;
  const char* text = nullptr;
  driver->cuGetErrorName(result, &name);
  driver->cuGetErrorString(result, &text);
  throw SetupError(std::string(call) +
                   " failed: " + (name != nullptr ? name : "CUDA error " + std::to_string(result)) +
                   " (" + (text != nullptr ? text : "no description") + ")");
}

// Device memory and library handles; freed in reverse order of creation.
struct GpuNet::State {
  const Device& device;
  const Stack& stack;
  const abi::Driver& cu;
  const abi::Cudnn& dnn;
  const abi::Cublas& blas;
  abi::CUmodule module = nullptr;
  abi::CUfunction bias_relu_forward = nullptr, relu_backward = nullptr,
                  softmax_cross_entropy = nullptr, column_sums = nullptr, sgd_update = nullptr;
  std::vector<abi::CUdeviceptr> allocations;
  abi::CUdeviceptr images = 0, labels = 0, params = 0, grads = 0, act = 0, dact = 0, logits = 0,
                   dlogits = 0, loss = 0, workspace = 0;
  std::size_t workspace_bytes = 0;
  abi::Descriptor cudnn = nullptr, x_desc = nullptr, y_desc = nullptr, bias_desc = nullptr,
                  w_desc = nullptr, conv_desc = nullptr;
  abi::cublasHandle_t cublas = nullptr;
  int filter_algo = abi::CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1;

  State(const Device& d, const Stack& s)
      : device(d), stack(s), cu(*d.driver), dnn(s.cudnn), blas(s.cublas) {}

  abi::CUdeviceptr allocate(std::size_t bytes) {
    abi::CUdeviceptr pointer = 0;
    device.check(cu.cuMemAlloc_v2(&pointer, bytes), "cuMemAlloc");
    allocations.push_back(pointer);
    return pointer;
  }
  void upload(abi::CUdeviceptr to, const void* from, std::size_t bytes) const {
    device.check(cu.cuMemcpyHtoD_v2(to, from, bytes), "cuMemcpyHtoD");
  }
  template <class T>
  std::vector<T> download(abi::CUdeviceptr from, std::size_t count) const {
    std::vector<T> host(count);
    device.check(cu.cuMemcpyDtoH_v2(host.data(), from, count * sizeof(T)), "cuMemcpyDtoH");
    return host;
  }
  void check(abi::cudnnStatus_t status, const char* call) const {
    if (status == abi::CUDNN_STATUS_SUCCESS) return;
    const char* text = dnn.cudnnGetErrorString(status);
    throw SetupError(std::string(call) + " failed: " + (text != nullptr ? text : "cuDNN error"));
  }
  void check_blas(abi::cublasStatus_t status, const char* call) const {
    if (status != abi::CUBLAS_STATUS_SUCCESS)
      throw SetupError(std::string(call) + " failed: cuBLAS status " + std::to_string(status));
  }
  abi::CUfunction function(const char* name) const {
    abi::CUfunction f = nullptr;
    device.check(cu.cuModuleGetFunction(&f, module, name), "cuModuleGetFunction");
    return f;
  }
  // A launch of `kernel` over `count` threads with `args` (pointers to each argument).
  void launch(abi::CUfunction kernel, std::size_t count, std::vector<void*> args,
              const char* name) const {
    const auto result = cu.cuLaunchKernel(kernel, blocks_for(count), 1, 1, kThreads, 1, 1, 0,
                                          nullptr, args.data(), nullptr);
    if (result != abi::CUDA_SUCCESS) {
      device.check(result, (std::string("launching kernel ") + name).c_str());
    }
  }
  abi::CUdeviceptr tensor(int t) const { return params + tensor_offset(t) * sizeof(float); }
  abi::CUdeviceptr grad(int t) const { return grads + tensor_offset(t) * sizeof(float); }
  abi::CUdeviceptr image(int start) const {
    return images + static_cast<std::size_t>(start) * kPixels * sizeof(float);
  }
  static void* ptr(abi::CUdeviceptr p) { return reinterpret_cast<void*>(p); }

  ~State() {
    if (cublas != nullptr) blas.cublasDestroy_v2(cublas);
    for (auto* desc : {x_desc, y_desc, bias_desc})
      if (desc != nullptr) dnn.cudnnDestroyTensorDescriptor(desc);
    if (w_desc != nullptr) dnn.cudnnDestroyFilterDescriptor(w_desc);
    if (conv_desc != nullptr) dnn.cudnnDestroyConvolutionDescriptor(conv_desc);
    if (cudnn != nullptr) dnn.cudnnDestroy(cudnn);
    for (auto pointer : allocations)
      cu.cuMemFree_v2(pointer);
  }
};

GpuNet::GpuNet(const Device& device, const Stack& stack, const std::string& image,
               const Dataset& data, const Params<float>& init)
    : state_(std::make_unique<State>(device, stack)) {
  auto& s = *state_;
  device.check(s.cu.cuModuleLoadData(&s.module, image.data()), "cuModuleLoadData");
  s.bias_relu_forward = s.function("bias_relu_forward");
  s.relu_backward = s.function("relu_backward");
  s.softmax_cross_entropy = s.function("softmax_cross_entropy");
  s.column_sums = s.function("column_sums");
  s.sgd_update = s.function("sgd_update");

  s.images = s.allocate(data.images.size() * sizeof(float));
  s.labels = s.allocate(data.labels.size() * sizeof(int));
  s.params = s.allocate(parameter_count() * sizeof(float));
  s.grads = s.allocate(parameter_count() * sizeof(float));
  s.act = s.allocate(act_size() * sizeof(float));
  s.dact = s.allocate(act_size() * sizeof(float));
  s.logits = s.allocate(static_cast<std::size_t>(kBatchSize) * kClasses * sizeof(float));
  s.dlogits = s.allocate(static_cast<std::size_t>(kBatchSize) * kClasses * sizeof(float));
  s.loss = s.allocate(static_cast<std::size_t>(kBatchSize) * sizeof(float));
  s.upload(s.images, data.images.data(), data.images.size() * sizeof(float));
  s.upload(s.labels, data.labels.data(), data.labels.size() * sizeof(int));
  const auto packed = init.packed();
  s.upload(s.params, packed.data(), packed.size() * sizeof(float));

  s.check(s.dnn.cudnnCreate(&s.cudnn), "cudnnCreate");
  s.check_blas(s.blas.cublasCreate_v2(&s.cublas), "cublasCreate");
  // Plain FP32 in both libraries, to match the reference to 1e-3 (smoke.cu says why).
  s.check_blas(s.blas.cublasSetMathMode(s.cublas, abi::CUBLAS_PEDANTIC_MATH), "cublasSetMathMode");
  const int n = kBatchSize;
  s.check(s.dnn.cudnnCreateTensorDescriptor(&s.x_desc), "cudnnCreateTensorDescriptor");
  s.check(s.dnn.cudnnSetTensor4dDescriptor(s.x_desc, abi::CUDNN_TENSOR_NCHW, abi::CUDNN_DATA_FLOAT,
                                           n, 1, kImageSize, kImageSize),
          "cudnnSetTensor4dDescriptor");
  s.check(s.dnn.cudnnCreateTensorDescriptor(&s.y_desc), "cudnnCreateTensorDescriptor");
  s.check(s.dnn.cudnnSetTensor4dDescriptor(s.y_desc, abi::CUDNN_TENSOR_NCHW, abi::CUDNN_DATA_FLOAT,
                                           n, kChannels, kImageSize, kImageSize),
          "cudnnSetTensor4dDescriptor");
  s.check(s.dnn.cudnnCreateTensorDescriptor(&s.bias_desc), "cudnnCreateTensorDescriptor");
  s.check(s.dnn.cudnnSetTensor4dDescriptor(s.bias_desc, abi::CUDNN_TENSOR_NCHW,
                                           abi::CUDNN_DATA_FLOAT, 1, kChannels, 1, 1),
          "cudnnSetTensor4dDescriptor");
  s.check(s.dnn.cudnnCreateFilterDescriptor(&s.w_desc), "cudnnCreateFilterDescriptor");
  s.check(s.dnn.cudnnSetFilter4dDescriptor(s.w_desc, abi::CUDNN_DATA_FLOAT, abi::CUDNN_TENSOR_NCHW,
                                           kChannels, 1, kKernelSize, kKernelSize),
          "cudnnSetFilter4dDescriptor");
  s.check(s.dnn.cudnnCreateConvolutionDescriptor(&s.conv_desc), "cudnnCreateConvolutionDescriptor");
  s.check(
      s.dnn.cudnnSetConvolution2dDescriptor(s.conv_desc, kPadding, kPadding, 1, 1, 1, 1,
                                            abi::CUDNN_CROSS_CORRELATION, abi::CUDNN_DATA_FLOAT),
      "cudnnSetConvolution2dDescriptor");
  s.check(s.dnn.cudnnSetConvolutionMathType(s.conv_desc, abi::CUDNN_FMA_MATH),
          "cudnnSetConvolutionMathType");
  int out_n = 0, out_c = 0, out_h = 0, out_w = 0;
  s.check(s.dnn.cudnnGetConvolution2dForwardOutputDim(s.conv_desc, s.x_desc, s.w_desc, &out_n,
                                                      &out_c, &out_h, &out_w),
          "cudnnGetConvolution2dForwardOutputDim");
  if (out_n != n || out_c != kChannels || out_h != kImageSize || out_w != kImageSize)
    throw SetupError("cudnnGetConvolution2dForwardOutputDim returned another shape");

  std::size_t forward_bytes = 0;
  s.check(s.dnn.cudnnGetConvolutionForwardWorkspaceSize(
              s.cudnn, s.x_desc, s.w_desc, s.conv_desc, s.y_desc,
              abi::CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, &forward_bytes),
          "cudnnGetConvolutionForwardWorkspaceSize");
  // ALGO_1 is deterministic; ALGO_0 (atomics) where a cuDNN version does not offer ALGO_1 here.
  std::size_t filter_bytes = 0;
  auto status = s.dnn.cudnnGetConvolutionBackwardFilterWorkspaceSize(
      s.cudnn, s.x_desc, s.y_desc, s.conv_desc, s.w_desc, s.filter_algo, &filter_bytes);
  if (status == abi::CUDNN8_STATUS_NOT_SUPPORTED || status == abi::CUDNN9_STATUS_NOT_SUPPORTED) {
    s.filter_algo = abi::CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0;
    status = s.dnn.cudnnGetConvolutionBackwardFilterWorkspaceSize(
        s.cudnn, s.x_desc, s.y_desc, s.conv_desc, s.w_desc, s.filter_algo, &filter_bytes);
  }
  s.check(status, "cudnnGetConvolutionBackwardFilterWorkspaceSize");
  s.workspace_bytes = std::max(forward_bytes, filter_bytes);
  if (s.workspace_bytes > 0) s.workspace = s.allocate(s.workspace_bytes);
}

GpuNet::~GpuNet() = default;

void GpuNet::forward(int start) {
  auto& s = *state_;
  const int n = kBatchSize;
  const float one = 1.0f;
  const float zero = 0.0f;
  s.check(s.dnn.cudnnConvolutionForward(
              s.cudnn, &one, s.x_desc, State::ptr(s.image(start)), s.w_desc,
              State::ptr(s.tensor(0)), s.conv_desc, abi::CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
              State::ptr(s.workspace), s.workspace_bytes, &zero, s.y_desc, State::ptr(s.act)),
          "cudnnConvolutionForward");
  auto bias = s.tensor(1);
  int channels = kChannels, pixels = kPixels, total = static_cast<int>(act_size());
  s.launch(s.bias_relu_forward, act_size(), {&s.act, &bias, &channels, &pixels, &total},
           "bias_relu_forward");
  // Row-major logits (n x K) = act (n x F) * W^T: column-major logits^T = W * act^T (smoke.cu).
  s.check_blas(s.blas.cublasSgemm_v2(s.cublas, abi::CUBLAS_OP_T, abi::CUBLAS_OP_N, kClasses, n,
                                     kFeatures, &one, reinterpret_cast<float*>(s.tensor(2)),
                                     kFeatures, reinterpret_cast<float*>(s.act), kFeatures, &zero,
                                     reinterpret_cast<float*>(s.logits), kClasses),
               "cublasSgemm");
  auto dense_bias = s.tensor(3);
  auto labels = s.labels + static_cast<std::size_t>(start) * sizeof(int);
  int batch = n, classes = kClasses;
  s.launch(s.softmax_cross_entropy, static_cast<std::size_t>(n),
           {&s.logits, &dense_bias, &labels, &batch, &classes, &s.loss, &s.dlogits},
           "softmax_cross_entropy");
}

void GpuNet::forward_backward(int start) {
  forward(start);
  auto& s = *state_;
  const int n = kBatchSize;
  const float one = 1.0f;
  const float zero = 0.0f;
  auto dense_bias_grad = s.grad(3);
  int rows = n, cols = kClasses;
  s.launch(s.column_sums, kThreads, {&s.dlogits, &rows, &cols, &dense_bias_grad}, "column_sums");
  s.check_blas(s.blas.cublasSgemm_v2(s.cublas, abi::CUBLAS_OP_N, abi::CUBLAS_OP_T, kFeatures,
                                     kClasses, n, &one, reinterpret_cast<float*>(s.act), kFeatures,
                                     reinterpret_cast<float*>(s.dlogits), kClasses, &zero,
                                     reinterpret_cast<float*>(s.grad(2)), kFeatures),
               "cublasSgemm");
  s.check_blas(s.blas.cublasSgemm_v2(s.cublas, abi::CUBLAS_OP_N, abi::CUBLAS_OP_N, kFeatures, n,
                                     kClasses, &one, reinterpret_cast<float*>(s.tensor(2)),
                                     kFeatures, reinterpret_cast<float*>(s.dlogits), kClasses,
                                     &zero, reinterpret_cast<float*>(s.dact), kFeatures),
               "cublasSgemm");
  int total = static_cast<int>(act_size());
  s.launch(s.relu_backward, act_size(), {&s.dact, &s.act, &total}, "relu_backward");
  s.check(s.dnn.cudnnConvolutionBackwardFilter(
              s.cudnn, &one, s.x_desc, State::ptr(s.image(start)), s.y_desc, State::ptr(s.dact),
              s.conv_desc, s.filter_algo, State::ptr(s.workspace), s.workspace_bytes, &zero,
              s.w_desc, State::ptr(s.grad(0))),
          "cudnnConvolutionBackwardFilter");
  s.check(s.dnn.cudnnConvolutionBackwardBias(s.cudnn, &one, s.y_desc, State::ptr(s.dact), &zero,
                                             s.bias_desc, State::ptr(s.grad(1))),
          "cudnnConvolutionBackwardBias");
}

void GpuNet::sgd(float learning_rate) {
  auto& s = *state_;
  int total = static_cast<int>(parameter_count());
  s.launch(s.sgd_update, parameter_count(), {&s.params, &s.grads, &learning_rate, &total},
           "sgd_update");
}

double GpuNet::batch_loss() const {
  double sum = 0.0;
  for (float l : state_->download<float>(state_->loss, kBatchSize))
    sum += static_cast<double>(l);
  return sum / kBatchSize;
}

Params<float> GpuNet::gradients() const {
  return Params<float>::unpack(state_->download<float>(state_->grads, parameter_count()).data());
}

Evaluation GpuNet::evaluate(const Dataset& data) {
  EvaluationSum sum;
  for (int start = 0; start < data.count; start += kBatchSize) {
    forward(start);
    const auto logits =
        state_->download<float>(state_->logits, static_cast<std::size_t>(kBatchSize) * kClasses);
    sum.add(logits.data(), data.labels.data() + start, kBatchSize);
  }
  return sum.result();
}

double GpuNet::train(int steps) {
  auto& s = *state_;
  abi::CUevent started = nullptr, stopped = nullptr;
  s.device.check(s.cu.cuEventCreate(&started, 0), "cuEventCreate");
  s.device.check(s.cu.cuEventCreate(&stopped, 0), "cuEventCreate");
  s.device.check(s.cu.cuCtxSynchronize(), "cuCtxSynchronize");
  s.device.check(s.cu.cuEventRecord(started, nullptr), "cuEventRecord");
  for (int step = 0; step < steps; ++step) {
    forward_backward(batch_start(step));
    sgd(kLearningRate);
  }
  s.device.check(s.cu.cuEventRecord(stopped, nullptr), "cuEventRecord");
  s.device.check(s.cu.cuEventSynchronize(stopped), "cuEventSynchronize");
  float milliseconds = 0.0f;
  s.device.check(s.cu.cuEventElapsedTime(&milliseconds, started, stopped), "cuEventElapsedTime");
  return static_cast<double>(milliseconds) / 1000.0;
}

}  // namespace envkit_smoke
