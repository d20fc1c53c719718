// envkit-smoke declares the few CUDA, NVRTC, cuDNN and cuBLAS types and constants it uses
// itself (src/smoke/runner/cuda_abi.hpp) so that it builds without CUDA. Here they are checked
// against NVIDIA's own headers, where /usr/local/cuda has them.
#include "cuda_abi.hpp"

#include <catch2/catch.hpp>

#include "support/skip.hpp"

#if __has_include("/usr/local/cuda/include/cudnn.h") && \
                  __has_include("/usr/local/cuda/include/cublas_api.h")
// NVIDIA's headers are C: envkit's C++ warnings are not theirs to meet.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wold-style-cast"
#include "/usr/local/cuda/include/cublas_api.h"
#include "/usr/local/cuda/include/cuda.h"
#include "/usr/local/cuda/include/cudnn.h"
#include "/usr/local/cuda/include/nvrtc.h"
#pragma GCC diagnostic pop
#define ENVKIT_HAVE_CUDA_HEADERS 1
#endif

namespace {

TEST_CASE("envkit-smoke's CUDA constants are the headers' own", "[smoke][runner][cuda]") {
#ifdef ENVKIT_HAVE_CUDA_HEADERS
  namespace abi = envkit_smoke::abi;
  static_assert(sizeof(abi::CUdeviceptr) == sizeof(CUdeviceptr));
  CHECK(abi::CUDA_SUCCESS == CUDA_SUCCESS);
  CHECK(abi::CUDA_ERROR_NOT_INITIALIZED == CUDA_ERROR_NOT_INITIALIZED);
  CHECK(abi::CUDA_ERROR_STUB_LIBRARY == CUDA_ERROR_STUB_LIBRARY);
  CHECK(abi::CUDA_ERROR_NO_DEVICE == CUDA_ERROR_NO_DEVICE);
  CHECK(abi::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR ==
        CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  CHECK(abi::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR ==
        CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  CHECK(abi::NVRTC_SUCCESS == NVRTC_SUCCESS);
  CHECK(abi::CUDNN_STATUS_SUCCESS == CUDNN_STATUS_SUCCESS);
  CHECK(abi::CUDNN9_STATUS_NOT_SUPPORTED == CUDNN_STATUS_NOT_SUPPORTED);
  CHECK(abi::CUDNN_TENSOR_NCHW == CUDNN_TENSOR_NCHW);
  CHECK(abi::CUDNN_DATA_FLOAT == CUDNN_DATA_FLOAT);
  CHECK(abi::CUDNN_CROSS_CORRELATION == CUDNN_CROSS_CORRELATION);
  CHECK(abi::CUDNN_FMA_MATH == CUDNN_FMA_MATH);
  CHECK(abi::CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM);
  CHECK(abi::CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0 == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0);
  CHECK(abi::CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1 == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1);
  CHECK(abi::CUBLAS_STATUS_SUCCESS == CUBLAS_STATUS_SUCCESS);
  CHECK(abi::CUBLAS_OP_N == CUBLAS_OP_N);
  CHECK(abi::CUBLAS_OP_T == CUBLAS_OP_T);
  CHECK(abi::CUBLAS_PEDANTIC_MATH == CUBLAS_PEDANTIC_MATH);
  CHECK(abi::MAJOR_VERSION == MAJOR_VERSION);
  CHECK(abi::MINOR_VERSION == MINOR_VERSION);
  CHECK(abi::PATCH_LEVEL == PATCH_LEVEL);
#else
  envkit::test::skip_test(envkit::test::SkipKind::expected,
                          "no CUDA, cuDNN and cuBLAS headers under /usr/local/cuda/include");
#endif
}

}  // namespace
