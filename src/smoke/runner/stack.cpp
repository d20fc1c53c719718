#include "stack.hpp"

#include <charconv>
#include <string_view>

#include "setup_error.hpp"

namespace envkit_smoke {

namespace {

// Binds every function of a table by its own name.
#define ENVKIT_BIND(library, table, function) library.bind(table.function, #function)

int leading_number(const std::string& text) {
  int value = 0;
  std::from_chars(text.data(), text.data() + text.size(), value);
  return value;
}

// "9.1.0.70" -> "9.1.0": cuDNN reports three parts.
std::string first_parts(const std::string& version, int parts) {
  std::size_t from = 0;
  std::size_t end = std::string::npos;
  for (int i = 0; i < parts; ++i) {
    end = version.find('.', from);
    if (end == std::string::npos) return version;
    from = end + 1;
  }
  return version.substr(0, end);
}

}  // namespace

std::string cuda_version_text(int version) {
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

std::string cudnn_version_text(std::size_t version) {
  const std::size_t major_unit = version >= 90000 ? 10000 : 1000;
  return std::to_string(version / major_unit) + "." + std::to_string(version % major_unit / 100) +
         "." + std::to_string(version % 100);
}

Stack open_stack(const StackPaths& paths) {
  Stack stack;
  for (const auto& path : paths.also) {
    try {
      static_cast<void>(Library(path));
    } catch (const SetupError& e) {
      // Only the driver may be missing: it is the machine's, not the prefix's.
      if (std::string_view(e.what()).find("libcuda.so.1:") == std::string_view::npos) throw;
      stack.deferred.push_back(path + ": needs the NVIDIA driver's libcuda.so.1");
    }
  }
  Library nvrtc(paths.nvrtc);
  ENVKIT_BIND(nvrtc, stack.nvrtc, nvrtcVersion);
  ENVKIT_BIND(nvrtc, stack.nvrtc, nvrtcGetErrorString);
  ENVKIT_BIND(nvrtc, stack.nvrtc, nvrtcCreateProgram);
  ENVKIT_BIND(nvrtc, stack.nvrtc, nvrtcCompileProgram);
  ENVKIT_BIND(nvrtc, stack.nvrtc, nvrtcGetProgramLogSize);
  ENVKIT_BIND(nvrtc, stack.nvrtc, nvrtcGetProgramLog);
  ENVKIT_BIND(nvrtc, stack.nvrtc, nvrtcGetPTXSize);
  ENVKIT_BIND(nvrtc, stack.nvrtc, nvrtcGetPTX);
  ENVKIT_BIND(nvrtc, stack.nvrtc, nvrtcDestroyProgram);
  nvrtc.bind_optional(stack.nvrtc.nvrtcGetCUBINSize, "nvrtcGetCUBINSize");
  nvrtc.bind_optional(stack.nvrtc.nvrtcGetCUBIN, "nvrtcGetCUBIN");
  nvrtc.bind_optional(stack.nvrtc.nvrtcGetNumSupportedArchs, "nvrtcGetNumSupportedArchs");
  nvrtc.bind_optional(stack.nvrtc.nvrtcGetSupportedArchs, "nvrtcGetSupportedArchs");
  nvrtc.check_bound("NVRTC");

  Library cudnn(paths.cudnn);
  auto& d = stack.cudnn;
  ENVKIT_BIND(cudnn, d, cudnnGetVersion);
  ENVKIT_BIND(cudnn, d, cudnnGetCudartVersion);
  ENVKIT_BIND(cudnn, d, cudnnGetErrorString);
  ENVKIT_BIND(cudnn, d, cudnnCreate);
  ENVKIT_BIND(cudnn, d, cudnnDestroy);
  ENVKIT_BIND(cudnn, d, cudnnCreateTensorDescriptor);
  ENVKIT_BIND(cudnn, d, cudnnSetTensor4dDescriptor);
  ENVKIT_BIND(cudnn, d, cudnnDestroyTensorDescriptor);
  ENVKIT_BIND(cudnn, d, cudnnCreateFilterDescriptor);
  ENVKIT_BIND(cudnn, d, cudnnSetFilter4dDescriptor);
  ENVKIT_BIND(cudnn, d, cudnnDestroyFilterDescriptor);
  ENVKIT_BIND(cudnn, d, cudnnCreateConvolutionDescriptor);
  ENVKIT_BIND(cudnn, d, cudnnSetConvolution2dDescriptor);
  ENVKIT_BIND(cudnn, d, cudnnSetConvolutionMathType);
  ENVKIT_BIND(cudnn, d, cudnnDestroyConvolutionDescriptor);
  ENVKIT_BIND(cudnn, d, cudnnGetConvolution2dForwardOutputDim);
  ENVKIT_BIND(cudnn, d, cudnnGetConvolutionForwardWorkspaceSize);
  ENVKIT_BIND(cudnn, d, cudnnGetConvolutionBackwardFilterWorkspaceSize);
  ENVKIT_BIND(cudnn, d, cudnnConvolutionForward);
  ENVKIT_BIND(cudnn, d, cudnnConvolutionBackwardFilter);
  ENVKIT_BIND(cudnn, d, cudnnConvolutionBackwardBias);
  cudnn.check_bound("cuDNN 8 or 9");

  Library cublas(paths.cublas);
  ENVKIT_BIND(cublas, stack.cublas, cublasCreate_v2);
  ENVKIT_BIND(cublas, stack.cublas, cublasDestroy_v2);
  ENVKIT_BIND(cublas, stack.cublas, cublasSetMathMode);
  ENVKIT_BIND(cublas, stack.cublas, cublasGetProperty);
  ENVKIT_BIND(cublas, stack.cublas, cublasSgemm_v2);
  cublas.check_bound("cuBLAS 11 or later");

  auto& v = stack.versions;
  int major = 0, minor = 0;
  if (stack.nvrtc.nvrtcVersion(&major, &minor) != abi::NVRTC_SUCCESS)
    throw SetupError("nvrtcVersion failed in " + nvrtc.path());
  v.nvrtc = std::to_string(major) + "." + std::to_string(minor);
  v.nvrtc_major = major;
  int parts[3] = {0, 0, 0};
  for (int i = 0; i < 3; ++i) {
    if (stack.cublas.cublasGetProperty(i, &parts[i]) != abi::CUBLAS_STATUS_SUCCESS)
      throw SetupError("cublasGetProperty failed in " + cublas.path());
  }
  v.cublas =
      std::to_string(parts[0]) + "." + std::to_string(parts[1]) + "." + std::to_string(parts[2]);
  v.cublas_major = parts[0];
  v.cudnn = cudnn_version_text(stack.cudnn.cudnnGetVersion());
  const auto cudart = static_cast<int>(stack.cudnn.cudnnGetCudartVersion());
  v.cudnn_cuda = cuda_version_text(cudart);
  v.cudnn_cuda_major = cudart / 1000;
  return stack;
}

std::vector<std::string> version_problems(const StackVersions& v, const Expected& expected) {
  std::vector<std::string> problems;
  const auto nvrtc = "NVRTC is CUDA " + v.nvrtc;
  if (v.cublas_major != v.nvrtc_major)
    problems.push_back("cuBLAS " + v.cublas + " is not of CUDA " + std::to_string(v.nvrtc_major) +
                       " (" + nvrtc + ")");
  if (v.cudnn_cuda_major != v.nvrtc_major)
    problems.push_back("cuDNN " + v.cudnn + " was built for CUDA " + v.cudnn_cuda + ", not " +
                       std::to_string(v.nvrtc_major) + " (" + nvrtc + ")");
  if (!expected.cuda.empty() && leading_number(expected.cuda) != v.nvrtc_major)
    problems.push_back("the lock's CUDA is " + expected.cuda + " but " + nvrtc);
  if (!expected.cudnn.empty() && first_parts(expected.cudnn, 3) != v.cudnn)
    problems.push_back("the lock's cuDNN is " + expected.cudnn + " but the library is " + v.cudnn);
  return problems;
}

}  // namespace envkit_smoke
