// envkit's GPU smoke-training test: trains a small conv net on the GPU with cuDNN and cuBLAS and
// checks it against the CPU reference in smoke_model.hpp. See README.md for the contract.
//
//   nvcc -std=c++17 -O2 smoke.cu -o smoke -lcudnn -lcublas
//   smoke [--steps N] [--seed S] [--cpu-only] [--json]
//
// Exit status: 0 pass, 1 fail (a check, or a CUDA/cuDNN/cuBLAS call), 2 usage error,
// 77 skip (no CUDA device or no driver).
//
// Only the legacy cuDNN convolution API is used (descriptors, cudnnConvolutionForward,
// cudnnConvolutionBackwardFilter, cudnnConvolutionBackwardBias): it exists in cuDNN 8 and 9 alike.
// cuDNN 9 marks it deprecated, which warns only where CUDNN_WARN_DEPRECATED is defined.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include "smoke_model.hpp"

namespace smoke = envkit_smoke;

namespace {

constexpr int kExitPass = 0;
constexpr int kExitFail = 1;
constexpr int kExitUsage = 2;
constexpr int kExitSkip = 77;
constexpr int kThreads = 256;

// ---------------------------------------------------------------------------------------------
// Errors: every CUDA, cuDNN and cuBLAS call is checked; a failure is reported as the call that
// failed and the library's error string, and fails the test (the stack is broken).

struct StackError {
  std::string what;
};

std::string call_name(const char* expression) {
  const std::string text(expression);
  return text.substr(0, text.find('('));
}

const char* cublas_status_string(cublasStatus_t status) {
  // cublasGetStatusString only exists from CUDA 11.4 on.
  switch (status) {
    case CUBLAS_STATUS_SUCCESS:
      return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED:
      return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH:
      return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR:
      return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED:
      return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR:
      return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR:
      return "CUBLAS_STATUS_LICENSE_ERROR";
    default:
      return "unknown cuBLAS status";
  }
}

void check(cudaError_t status, const char* expression) {
  if (status != cudaSuccess) {
    throw StackError{call_name(expression) + " failed: " + cudaGetErrorName(status) + " (" +
                     cudaGetErrorString(status) + ")"};
  }
}

void check(cudnnStatus_t status, const char* expression) {
  if (status != CUDNN_STATUS_SUCCESS) {
    throw StackError{call_name(expression) + " failed: " + cudnnGetErrorString(status)};
  }
}

void check(cublasStatus_t status, const char* expression) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw StackError{call_name(expression) + " failed: " + cublas_status_string(status)};
  }
}

#define SMOKE_CHECK(expression) check((expression), #expression)

// After a kernel launch: a missing kernel image for this GPU, bad launch configuration, ...
void check_launch(const char* kernel) {
  const cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess) {
    throw StackError{std::string("launching kernel ") + kernel + " failed: " +
                     cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ")"};
  }
}

// ---------------------------------------------------------------------------------------------
// Owners of library handles, descriptors and device memory.

template <class Handle, auto Destroy>
class Owned {
 public:
  Owned() = default;
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;
  ~Owned() {
    if (handle_ != nullptr) static_cast<void>(Destroy(handle_));
  }
  Handle* out() { return &handle_; }
  Handle get() const { return handle_; }

 private:
  Handle handle_ = nullptr;
};

template <class T>
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t count) : count_(count) {
    if (count > 0) SMOKE_CHECK(cudaMalloc(&data_, count * sizeof(T)));
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (data_ != nullptr) static_cast<void>(cudaFree(data_));
  }
  T* get() const { return data_; }
  std::size_t bytes() const { return count_ * sizeof(T); }
  void upload(const T* host) {
    SMOKE_CHECK(cudaMemcpy(data_, host, bytes(), cudaMemcpyHostToDevice));
  }
  std::vector<T> download() const {
    std::vector<T> host(count_);
    SMOKE_CHECK(cudaMemcpy(host.data(), data_, bytes(), cudaMemcpyDeviceToHost));
    return host;
  }

 private:
  T* data_ = nullptr;
  std::size_t count_;
};

// ---------------------------------------------------------------------------------------------
// Kernel launches (kernels.cuh).

int blocks_for(std::size_t count) {
  return static_cast<int>((count + kThreads - 1) / kThreads);
}

// The kernels themselves are shared with envkit-smoke (the NVRTC build).
#include "kernels.cuh"

// ---------------------------------------------------------------------------------------------
// The network on the GPU. Parameters and gradients each live in one buffer, packed in the
// order of smoke::tensor_offset; the whole training set is on the device.

class GpuNet {
 public:
  GpuNet(const smoke::Dataset& data, const smoke::Params<float>& init)
      : images_(data.images.size()),
        labels_(data.labels.size()),
        params_(smoke::parameter_count()),
        grads_(smoke::parameter_count()),
        act_(static_cast<std::size_t>(smoke::kBatchSize) * smoke::kFeatures),
        dact_(act_size()),
        logits_(static_cast<std::size_t>(smoke::kBatchSize) * smoke::kClasses),
        dlogits_(static_cast<std::size_t>(smoke::kBatchSize) * smoke::kClasses),
        loss_(static_cast<std::size_t>(smoke::kBatchSize)) {
    images_.upload(data.images.data());
    labels_.upload(data.labels.data());
    params_.upload(init.packed().data());

    SMOKE_CHECK(cudnnCreate(cudnn_.out()));
    SMOKE_CHECK(cublasCreate(cublas_.out()));
    // Both libraries must compute in plain FP32 to match the reference to 1e-3: no TF32 tensor
    // cores, which round the inputs to 10 mantissa bits. cuDNN's default math type may use TF32
    // for FP32 convolutions on Ampere and later; CUDNN_FMA_MATH forbids it. cuBLAS's default
    // math mode already avoids TF32 for SGEMM since CUDA 11, but CUBLAS_PEDANTIC_MATH also rules
    // out any other reduced-precision path whatever a cuBLAS version's defaults and environment
    // overrides are; its cost does not matter at this size.
    SMOKE_CHECK(cublasSetMathMode(cublas_.get(), CUBLAS_PEDANTIC_MATH));

    const int n = smoke::kBatchSize;
    SMOKE_CHECK(cudnnCreateTensorDescriptor(x_desc_.out()));
    SMOKE_CHECK(cudnnSetTensor4dDescriptor(x_desc_.get(), CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, 1,
                                           smoke::kImageSize, smoke::kImageSize));
    SMOKE_CHECK(cudnnCreateTensorDescriptor(y_desc_.out()));
    SMOKE_CHECK(cudnnSetTensor4dDescriptor(y_desc_.get(), CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n,
                                           smoke::kChannels, smoke::kImageSize, smoke::kImageSize));
    SMOKE_CHECK(cudnnCreateTensorDescriptor(bias_desc_.out()));
    SMOKE_CHECK(cudnnSetTensor4dDescriptor(bias_desc_.get(), CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1,
                                           smoke::kChannels, 1, 1));
    SMOKE_CHECK(cudnnCreateFilterDescriptor(w_desc_.out()));
    SMOKE_CHECK(cudnnSetFilter4dDescriptor(w_desc_.get(), CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW,
                                           smoke::kChannels, 1, smoke::kKernelSize,
                                           smoke::kKernelSize));
    SMOKE_CHECK(cudnnCreateConvolutionDescriptor(conv_desc_.out()));
    SMOKE_CHECK(cudnnSetConvolution2dDescriptor(conv_desc_.get(), smoke::kPadding, smoke::kPadding,
                                                1, 1, 1, 1, CUDNN_CROSS_CORRELATION,
                                                CUDNN_DATA_FLOAT));
    SMOKE_CHECK(cudnnSetConvolutionMathType(conv_desc_.get(), CUDNN_FMA_MATH));

    int out_n = 0, out_c = 0, out_h = 0, out_w = 0;
    SMOKE_CHECK(cudnnGetConvolution2dForwardOutputDim(
        conv_desc_.get(), x_desc_.get(), w_desc_.get(), &out_n, &out_c, &out_h, &out_w));
    if (out_n != n || out_c != smoke::kChannels || out_h != smoke::kImageSize ||
        out_w != smoke::kImageSize) {
      throw StackError{"cudnnGetConvolution2dForwardOutputDim returned " + std::to_string(out_n) +
                       "x" + std::to_string(out_c) + "x" + std::to_string(out_h) + "x" +
                       std::to_string(out_w) + ", not the expected convolution output"};
    }

    std::size_t forward_bytes = 0;
    SMOKE_CHECK(cudnnGetConvolutionForwardWorkspaceSize(cudnn_.get(), x_desc_.get(), w_desc_.get(),
                                                        conv_desc_.get(), y_desc_.get(),
                                                        kForwardAlgo, &forward_bytes));
    // ALGO_1 is deterministic; ALGO_0 (atomics) where a cuDNN version does not offer ALGO_1 here.
    std::size_t filter_bytes = 0;
    cudnnStatus_t status = cudnnGetConvolutionBackwardFilterWorkspaceSize(
        cudnn_.get(), x_desc_.get(), y_desc_.get(), conv_desc_.get(), w_desc_.get(), filter_algo_,
        &filter_bytes);
    if (status == CUDNN_STATUS_NOT_SUPPORTED) {
      filter_algo_ = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0;
      status = cudnnGetConvolutionBackwardFilterWorkspaceSize(
          cudnn_.get(), x_desc_.get(), y_desc_.get(), conv_desc_.get(), w_desc_.get(), filter_algo_,
          &filter_bytes);
    }
    check(status, "cudnnGetConvolutionBackwardFilterWorkspaceSize");
    workspace_bytes_ = std::max(forward_bytes, filter_bytes);
    if (workspace_bytes_ > 0) SMOKE_CHECK(cudaMalloc(&workspace_, workspace_bytes_));
  }

  GpuNet(const GpuNet&) = delete;
  GpuNet& operator=(const GpuNet&) = delete;
  ~GpuNet() {
    if (workspace_ != nullptr) static_cast<void>(cudaFree(workspace_));
  }

  // conv + bias + ReLU -> act_, dense -> logits_, softmax cross-entropy -> loss_, dlogits_;
  // on the minibatch of kBatchSize samples from `start`.
  void forward(int start) {
    const int n = smoke::kBatchSize;
    const float one = 1.0f;
    const float zero = 0.0f;
    SMOKE_CHECK(cudnnConvolutionForward(
        cudnn_.get(), &one, x_desc_.get(), image(start), w_desc_.get(), tensor(0), conv_desc_.get(),
        kForwardAlgo, workspace_, workspace_bytes_, &zero, y_desc_.get(), act_.get()));
    const int total = static_cast<int>(act_size());
    bias_relu_forward<<<blocks_for(act_size()), kThreads>>>(act_.get(), tensor(1), smoke::kChannels,
                                                            smoke::kPixels, total);
    check_launch("bias_relu_forward");
    // Row-major logits (n x K) = act (n x F) * W^T (F x K). cuBLAS is column-major, where the
    // same buffers hold logits^T (K x n), act^T (F x n) and W^T (F x K): logits^T = W * act^T,
    // that is op(A) = (W^T)^T with lda F, B = act^T with ldb F.
    SMOKE_CHECK(cublasSgemm(cublas_.get(), CUBLAS_OP_T, CUBLAS_OP_N, smoke::kClasses, n,
                            smoke::kFeatures, &one, tensor(2), smoke::kFeatures, act_.get(),
                            smoke::kFeatures, &zero, logits_.get(), smoke::kClasses));
    softmax_cross_entropy<<<blocks_for(static_cast<std::size_t>(n)), kThreads>>>(
        logits_.get(), tensor(3), labels_.get() + start, n, smoke::kClasses, loss_.get(),
        dlogits_.get());
    check_launch("softmax_cross_entropy");
  }

  // forward, then every gradient into grads_.
  void forward_backward(int start) {
    forward(start);
    const int n = smoke::kBatchSize;
    const float one = 1.0f;
    const float zero = 0.0f;
    // Dense bias: column sums of dlogits.
    column_sums<<<1, kThreads>>>(dlogits_.get(), n, smoke::kClasses, grad(3));
    check_launch("column_sums");
    // Dense weights, row-major dW (K x F) = dlogits^T (K x n) * act (n x F); column-major
    // dW^T (F x K) = act^T (F x n) * dlogits (n x K), where dlogits^T (K x n, ld K) is the
    // buffer.
    SMOKE_CHECK(cublasSgemm(cublas_.get(), CUBLAS_OP_N, CUBLAS_OP_T, smoke::kFeatures,
                            smoke::kClasses, n, &one, act_.get(), smoke::kFeatures, dlogits_.get(),
                            smoke::kClasses, &zero, grad(2), smoke::kFeatures));
    // Activations, row-major dact (n x F) = dlogits (n x K) * W (K x F); column-major
    // dact^T (F x n) = W^T (F x K) * dlogits^T (K x n).
    SMOKE_CHECK(cublasSgemm(cublas_.get(), CUBLAS_OP_N, CUBLAS_OP_N, smoke::kFeatures, n,
                            smoke::kClasses, &one, tensor(2), smoke::kFeatures, dlogits_.get(),
                            smoke::kClasses, &zero, dact_.get(), smoke::kFeatures));
    relu_backward<<<blocks_for(act_size()), kThreads>>>(dact_.get(), act_.get(),
                                                        static_cast<int>(act_size()));
    check_launch("relu_backward");
    SMOKE_CHECK(cudnnConvolutionBackwardFilter(cudnn_.get(), &one, x_desc_.get(), image(start),
                                               y_desc_.get(), dact_.get(), conv_desc_.get(),
                                               filter_algo_, workspace_, workspace_bytes_, &zero,
                                               w_desc_.get(), grad(0)));
    SMOKE_CHECK(cudnnConvolutionBackwardBias(cudnn_.get(), &one, y_desc_.get(), dact_.get(), &zero,
                                             bias_desc_.get(), grad(1)));
  }

  void sgd(float learning_rate) {
    const std::size_t count = smoke::parameter_count();
    sgd_update<<<blocks_for(count), kThreads>>>(params_.get(), grads_.get(), learning_rate,
                                                static_cast<int>(count));
    check_launch("sgd_update");
  }

  // Mean loss of the last forward's minibatch, from the per-sample losses the GPU computed.
  double batch_loss() const {
    double sum = 0.0;
    for (float l : loss_.download())
      sum += static_cast<double>(l);
    return sum / smoke::kBatchSize;
  }

  smoke::Params<float> gradients() const {
    return smoke::Params<float>::unpack(grads_.download().data());
  }

  // Loss and accuracy over the whole set: the GPU computes the logits, the host turns them into
  // loss and accuracy with the reference's softmax (4 numbers per sample).
  smoke::Evaluation evaluate(const smoke::Dataset& data) {
    smoke::EvaluationSum sum;
    for (int start = 0; start < data.count; start += smoke::kBatchSize) {
      forward(start);
      const std::vector<float> logits = logits_.download();
      sum.add(logits.data(), data.labels.data() + start, smoke::kBatchSize);
    }
    return sum.result();
  }

 private:
  static constexpr cudnnConvolutionFwdAlgo_t kForwardAlgo =
      CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;

  static std::size_t act_size() {
    return static_cast<std::size_t>(smoke::kBatchSize) * smoke::kFeatures;
  }
  const float* image(int start) const {
    return images_.get() + static_cast<std::size_t>(start) * smoke::kPixels;
  }
  float* tensor(int t) const { return params_.get() + smoke::tensor_offset(t); }
  float* grad(int t) const { return grads_.get() + smoke::tensor_offset(t); }

  DeviceBuffer<float> images_;
  DeviceBuffer<int> labels_;
  DeviceBuffer<float> params_;
  DeviceBuffer<float> grads_;
  DeviceBuffer<float> act_;
  DeviceBuffer<float> dact_;
  DeviceBuffer<float> logits_;
  DeviceBuffer<float> dlogits_;
  DeviceBuffer<float> loss_;
  Owned<cudnnHandle_t, cudnnDestroy> cudnn_;
  Owned<cublasHandle_t, cublasDestroy> cublas_;
  Owned<cudnnTensorDescriptor_t, cudnnDestroyTensorDescriptor> x_desc_;
  Owned<cudnnTensorDescriptor_t, cudnnDestroyTensorDescriptor> y_desc_;
  Owned<cudnnTensorDescriptor_t, cudnnDestroyTensorDescriptor> bias_desc_;
  Owned<cudnnFilterDescriptor_t, cudnnDestroyFilterDescriptor> w_desc_;
  Owned<cudnnConvolutionDescriptor_t, cudnnDestroyConvolutionDescriptor> conv_desc_;
  cudnnConvolutionBwdFilterAlgo_t filter_algo_ = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1;
  void* workspace_ = nullptr;
  std::size_t workspace_bytes_ = 0;
};

// ---------------------------------------------------------------------------------------------
// The report: human-readable lines on stderr as it goes, one JSON object on stdout at the end.

struct Report {
  std::string status = "fail";
  std::string reason;
  std::optional<std::string> gpu, compute_capability, driver, cuda_runtime, cudnn;
  int steps = smoke::kDefaultSteps;
  std::optional<double> loss_first, loss_last, accuracy, max_reference_error, gpu_seconds,
      cpu_seconds;

  void add_failure(const std::string& what) {
    if (!reason.empty()) reason += "; ";
    reason += what;
  }
};

void say(const std::string& line) {
  std::fprintf(stderr, "smoke: %s\n", line.c_str());
}

std::string json_string(const std::optional<std::string>& value) {
  if (!value) return "null";
  std::string out = "\"";
  for (const char c : *value) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char escaped[8];
          std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned>(c));
          out += escaped;
        } else {
          out += c;  // UTF-8 passes through
        }
    }
  }
  return out + "\"";
}

std::string json_number(const std::optional<double>& value) {
  if (!value || !std::isfinite(*value)) return "null";
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.6g", *value);
  return buffer;
}

void print_json(const Report& r) {
  std::printf(
      "{\"status\":%s,\"reason\":%s,\"gpu\":%s,\"compute_capability\":%s,\"driver\":%s,"
      "\"cuda_runtime\":%s,\"cudnn\":%s,\"steps\":%d,\"loss_first\":%s,\"loss_last\":%s,"
      "\"accuracy\":%s,\"max_reference_error\":%s,\"gpu_seconds\":%s,\"cpu_seconds\":%s}\n",
      json_string(r.status).c_str(), json_string(r.reason).c_str(), json_string(r.gpu).c_str(),
      json_string(r.compute_capability).c_str(), json_string(r.driver).c_str(),
      json_string(r.cuda_runtime).c_str(), json_string(r.cudnn).c_str(), r.steps,
      json_number(r.loss_first).c_str(), json_number(r.loss_last).c_str(),
      json_number(r.accuracy).c_str(), json_number(r.max_reference_error).c_str(),
      json_number(r.gpu_seconds).c_str(), json_number(r.cpu_seconds).c_str());
  std::fflush(stdout);
}

// 12040 -> "12.4" (cudaDriverGetVersion, cudaRuntimeGetVersion).
std::string cuda_version_string(int version) {
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

// cuDNN 9 encodes major*10000 + minor*100 + patch, cuDNN 8 major*1000 + minor*100 + patch.
std::string cudnn_version_string(std::size_t version) {
  const std::size_t major_unit = version >= 90000 ? 10000 : 1000;
  return std::to_string(version / major_unit) + "." + std::to_string(version % major_unit / 100) +
         "." + std::to_string(version % 100);
}

void record_training(Report& report, const smoke::TrainResult& result, const char* where) {
  report.loss_first = result.loss_first;
  report.loss_last = result.loss_last;
  report.accuracy = result.accuracy;
  char line[200];
  std::snprintf(line, sizeof line,
                "trained %d steps on the %s: training-set loss %.4g -> %.4g, accuracy %.1f%%",
                report.steps, where, result.loss_first, result.loss_last, 100 * result.accuracy);
  say(line);
  const std::string failed = smoke::check_training(result);
  if (!failed.empty()) report.add_failure(failed);
}

int run_cpu_only(Report& report, std::uint64_t seed) {
  say("--cpu-only: training with the CPU reference, no CUDA calls");
  const smoke::Dataset data = smoke::make_dataset(seed);
  double seconds = 0.0;
  const smoke::TrainResult result = smoke::train_reference(data, seed, report.steps, seconds);
  report.cpu_seconds = seconds;
  record_training(report, result, "CPU");
  char line[100];
  std::snprintf(line, sizeof line, "CPU reference: %.3f s for %d steps", seconds, report.steps);
  say(line);
  return report.reason.empty() ? kExitPass : kExitFail;
}

// Returns kExitSkip where there is no device or no driver, having filled in the reason.
int run_gpu(Report& report, std::uint64_t seed) {
  // First: is there a GPU at all? Nothing else touches the device before this.
  int driver_version = 0;
  SMOKE_CHECK(cudaDriverGetVersion(&driver_version));  // 0 where no driver is installed
  if (driver_version > 0) report.driver = cuda_version_string(driver_version);
  int runtime_version = 0;
  SMOKE_CHECK(cudaRuntimeGetVersion(&runtime_version));
  report.cuda_runtime = cuda_version_string(runtime_version);
  report.cudnn = cudnn_version_string(cudnnGetVersion());

  int device_count = 0;
  const cudaError_t count_status = cudaGetDeviceCount(&device_count);
  if (count_status == cudaErrorInsufficientDriver && driver_version > 0) {
    // A driver is there but too old for this CUDA runtime: the installed stack cannot work on
    // this machine, which is what the test is for.
    report.add_failure("the NVIDIA driver supports CUDA " + *report.driver +
                       ", older than the CUDA runtime " + *report.cuda_runtime +
                       " needs (cudaGetDeviceCount: " + cudaGetErrorString(count_status) + ")");
    return kExitFail;
  }
  if (count_status == cudaErrorNoDevice || count_status == cudaErrorInsufficientDriver ||
      (count_status == cudaSuccess && device_count == 0)) {
    report.status = "skip";
    std::string why = cudaGetErrorString(count_status);
    if (count_status == cudaSuccess) why = "cudaGetDeviceCount found 0 devices";
    if (count_status != cudaSuccess && driver_version == 0) {
      why = "no NVIDIA driver is installed (" + why + ")";
    }
    report.reason = "no CUDA device: " + why;
    return kExitSkip;
  }
  check(count_status, "cudaGetDeviceCount");

  SMOKE_CHECK(cudaSetDevice(0));
  cudaDeviceProp properties{};
  SMOKE_CHECK(cudaGetDeviceProperties(&properties, 0));
  report.gpu = std::string(properties.name);
  report.compute_capability =
      std::to_string(properties.major) + "." + std::to_string(properties.minor);
  say("GPU 0 of " + std::to_string(device_count) + ": " + *report.gpu + ", compute capability " +
      *report.compute_capability);
  say("driver CUDA " + report.driver.value_or("?") + ", CUDA runtime " + *report.cuda_runtime +
      ", cuDNN " + *report.cudnn + " (built against CUDA runtime " +
      cuda_version_string(CUDART_VERSION) + ", cuDNN " + cudnn_version_string(CUDNN_VERSION) + ")");

  const smoke::Dataset data = smoke::make_dataset(seed);
  const smoke::Params<float> init = smoke::init_params(seed);
  GpuNet net(data, init);

  // Check 1: the first step's loss and gradients against the CPU reference, same weights and
  // minibatch.
  net.forward_backward(smoke::batch_start(0));
  const double gpu_loss = net.batch_loss();
  const smoke::Params<float> gpu_grads = net.gradients();
  const smoke::ReferenceCheck reference = smoke::check_first_step(gpu_loss, gpu_grads, init, data);
  report.max_reference_error = reference.max_error;
  say("first step vs CPU reference, relative error: " + reference.errors);
  if (!reference.failure.empty()) report.add_failure(reference.failure);

  // Checks 2 and 3: training on the GPU.
  smoke::TrainResult result;
  result.loss_first = net.evaluate(data).loss;
  Owned<cudaEvent_t, cudaEventDestroy> started, stopped;
  SMOKE_CHECK(cudaEventCreate(started.out()));
  SMOKE_CHECK(cudaEventCreate(stopped.out()));
  SMOKE_CHECK(cudaDeviceSynchronize());
  SMOKE_CHECK(cudaEventRecord(started.get()));
  for (int step = 0; step < report.steps; ++step) {
    net.forward_backward(smoke::batch_start(step));
    net.sgd(smoke::kLearningRate);
  }
  SMOKE_CHECK(cudaEventRecord(stopped.get()));
  SMOKE_CHECK(cudaEventSynchronize(stopped.get()));
  float milliseconds = 0.0f;
  SMOKE_CHECK(cudaEventElapsedTime(&milliseconds, started.get(), stopped.get()));
  report.gpu_seconds = static_cast<double>(milliseconds) / 1000.0;
  const smoke::Evaluation last = net.evaluate(data);
  result.loss_last = last.loss;
  result.accuracy = last.accuracy;
  record_training(report, result, "GPU");

  // The CPU reference doing the same steps, for the timing (and, for information, its loss).
  double cpu_seconds = 0.0;
  const smoke::TrainResult cpu = smoke::train_reference(data, seed, report.steps, cpu_seconds);
  report.cpu_seconds = cpu_seconds;
  char line[200];
  std::snprintf(line, sizeof line,
                "time for %d steps: GPU %.4f s, CPU reference %.3f s (%.1fx); CPU reference "
                "training-set loss %.4g -> %.4g",
                report.steps, *report.gpu_seconds, cpu_seconds,
                *report.gpu_seconds > 0 ? cpu_seconds / *report.gpu_seconds : 0.0, cpu.loss_first,
                cpu.loss_last);
  say(line);
  return report.reason.empty() ? kExitPass : kExitFail;
}

void usage(std::FILE* to) {
  std::fprintf(to,
               "usage: smoke [--steps N] [--seed S] [--cpu-only] [--json]\n"
               "  --steps N    training steps (default %d)\n"
               "  --seed S     seed of the data and the initial weights (default %llu)\n"
               "  --cpu-only   train with the CPU reference only; no CUDA calls\n"
               "  --json       one JSON object with the result on stdout\n"
               "exit status: 0 pass, 1 fail, 2 usage error, 77 skip (no CUDA device or driver)\n",
               smoke::kDefaultSteps, static_cast<unsigned long long>(smoke::kDefaultSeed));
}

bool parse_unsigned(const char* text, unsigned long long max, unsigned long long& value) {
  if (text == nullptr || *text < '0' || *text > '9') return false;
  char* end = nullptr;
  errno = 0;
  value = std::strtoull(text, &end, 10);
  return errno == 0 && *end == '\0' && value <= max;
}

}  // namespace

int main(int argc, char** argv) {
  Report report;
  std::uint64_t seed = smoke::kDefaultSeed;
  bool cpu_only = false;
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    unsigned long long value = 0;
    if (arg == "--steps" || arg == "--seed") {
      const bool steps = arg == "--steps";
      const char* text = i + 1 < argc ? argv[++i] : nullptr;
      if (!parse_unsigned(text, steps ? 1000000ULL : UINT64_MAX, value) || (steps && value == 0)) {
        std::fprintf(stderr, "smoke: %s needs a number%s, not %s\n", arg.c_str(),
                     steps ? " from 1 to 1000000" : "", text != nullptr ? text : "nothing");
        usage(stderr);
        return kExitUsage;
      }
      if (steps) {
        report.steps = static_cast<int>(value);
      } else {
        seed = static_cast<std::uint64_t>(value);
      }
    } else if (arg == "--cpu-only") {
      cpu_only = true;
    } else if (arg == "--json") {
      json = true;
    } else if (arg == "--help" || arg == "-h") {
      usage(stdout);
      return kExitPass;
    } else {
      std::fprintf(stderr, "smoke: unknown argument: %s\n", arg.c_str());
      usage(stderr);
      return kExitUsage;
    }
  }

  int code = kExitFail;
  try {
    code = cpu_only ? run_cpu_only(report, seed) : run_gpu(report, seed);
  } catch (const StackError& e) {
    report.add_failure(e.what);
    code = kExitFail;
  } catch (const std::exception& e) {
    report.add_failure(std::string("unexpected error: ") + e.what());
    code = kExitFail;
  }
  if (code == kExitPass) report.status = "pass";
  if (code == kExitFail) report.status = "fail";
  if (code == kExitSkip) report.status = "skip";
  say(code == kExitPass ? "PASS" : (report.status == "skip" ? "SKIP: " : "FAIL: ") + report.reason);
  if (json) print_json(report);
  return code;
}
