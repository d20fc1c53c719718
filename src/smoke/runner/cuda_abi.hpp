#pragma once

// The parts of the CUDA driver, NVRTC, cuDNN and cuBLAS C APIs that envkit-smoke calls, declared
// here rather than taken from CUDA's headers: the program is built with envkit, on machines
// without CUDA, and opens each library from the prefix by path at run time. Handles are opaque
// pointers and enums are ints, as in the C ABI; every value below is the one in NVIDIA's headers
// (cuda.h, nvrtc.h, cudnn_graph.h / cudnn.h, cublas_api.h, library_types.h), unchanged across the
// releases envkit-smoke runs on (CUDA 11.2 and later, cuDNN 8 and 9).
// tests/unit/smoke/cuda_abi_test.cpp checks them against the real headers where they exist.
#include <cstddef>

namespace envkit_smoke::abi {

// ---- The driver API (libcuda.so.1) ----
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;  // 64-bit on every platform envkit supports
using CUcontext = struct CUctx_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
using CUstream = struct CUstream_st*;
using CUevent = struct CUevent_st*;

inline constexpr CUresult CUDA_SUCCESS = 0;
inline constexpr CUresult CUDA_ERROR_NOT_INITIALIZED = 3;
inline constexpr CUresult CUDA_ERROR_STUB_LIBRARY = 34;
inline constexpr CUresult CUDA_ERROR_NO_DEVICE = 100;
inline constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
inline constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;

struct Driver {
  CUresult (*cuInit)(unsigned int);
  CUresult (*cuDriverGetVersion)(int*);
  CUresult (*cuDeviceGetCount)(int*);
  CUresult (*cuDeviceGet)(CUdevice*, int);
  CUresult (*cuDeviceGetName)(char*, int, CUdevice);
  CUresult (*cuDeviceGetAttribute)(int*, int, CUdevice);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuCtxSynchronize)();
  CUresult (*cuModuleLoadData)(CUmodule*, const void*);
  CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, CUstream, void**, void**);
  CUresult (*cuMemAlloc_v2)(CUdeviceptr*, std::size_t);
  CUresult (*cuMemFree_v2)(CUdeviceptr);
  CUresult (*cuMemcpyHtoD_v2)(CUdeviceptr, const void*, std::size_t);
  CUresult (*cuMemcpyDtoH_v2)(void*, CUdeviceptr, std::size_t);
  CUresult (*cuEventCreate)(CUevent*, unsigned int);
  CUresult (*cuEventRecord)(CUevent, CUstream);
  CUresult (*cuEventSynchronize)(CUevent);
  CUresult (*cuEventElapsedTime)(float*, CUevent, CUevent);
  CUresult (*cuGetErrorName)(CUresult, const char**);
  CUresult (*cuGetErrorString)(CUresult, const char**);
  CUresult (*cuDeviceGetUuid)(unsigned char*, CUdevice);  // CUuuid: 16 bytes; CUDA 9.2 and later
};

// ---- NVRTC (libnvrtc.so.N) ----
using nvrtcResult = int;
using nvrtcProgram = struct _nvrtcProgram*;
inline constexpr nvrtcResult NVRTC_SUCCESS = 0;

struct Nvrtc {
  nvrtcResult (*nvrtcVersion)(int*, int*);
  const char* (*nvrtcGetErrorString)(nvrtcResult);
  nvrtcResult (*nvrtcCreateProgram)(nvrtcProgram*, const char*, const char*, int,
                                    const char* const*, const char* const*);
  nvrtcResult (*nvrtcCompileProgram)(nvrtcProgram, int, const char* const*);
  nvrtcResult (*nvrtcGetProgramLogSize)(nvrtcProgram, std::size_t*);
  nvrtcResult (*nvrtcGetProgramLog)(nvrtcProgram, char*);
  nvrtcResult (*nvrtcGetCUBINSize)(nvrtcProgram, std::size_t*);  // NVRTC 11.1 and later
  nvrtcResult (*nvrtcGetCUBIN)(nvrtcProgram, char*);
  nvrtcResult (*nvrtcGetPTXSize)(nvrtcProgram, std::size_t*);
  nvrtcResult (*nvrtcGetPTX)(nvrtcProgram, char*);
  nvrtcResult (*nvrtcDestroyProgram)(nvrtcProgram*);
  nvrtcResult (*nvrtcGetNumSupportedArchs)(int*);  // NVRTC 11.2 and later
  nvrtcResult (*nvrtcGetSupportedArchs)(int*);
};

// ---- cuDNN (libcudnn.so.N): the legacy convolution API, in cuDNN 8 and 9 alike ----
using cudnnStatus_t = int;
using Descriptor = void*;  // cudnnHandle_t and every *Descriptor_t
inline constexpr cudnnStatus_t CUDNN_STATUS_SUCCESS = 0;
inline constexpr cudnnStatus_t CUDNN8_STATUS_NOT_SUPPORTED = 9;
inline constexpr cudnnStatus_t CUDNN9_STATUS_NOT_SUPPORTED = 3000;
inline constexpr int CUDNN_TENSOR_NCHW = 0;
inline constexpr int CUDNN_DATA_FLOAT = 0;
inline constexpr int CUDNN_CROSS_CORRELATION = 1;
inline constexpr int CUDNN_FMA_MATH = 3;
inline constexpr int CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM = 0;
inline constexpr int CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0 = 0;
inline constexpr int CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1 = 1;

struct Cudnn {
  std::size_t (*cudnnGetVersion)();
  std::size_t (*cudnnGetCudartVersion)();
  const char* (*cudnnGetErrorString)(cudnnStatus_t);
  cudnnStatus_t (*cudnnCreate)(Descriptor*);
  cudnnStatus_t (*cudnnDestroy)(Descriptor);
  cudnnStatus_t (*cudnnCreateTensorDescriptor)(Descriptor*);
  cudnnStatus_t (*cudnnSetTensor4dDescriptor)(Descriptor, int, int, int, int, int, int);
  cudnnStatus_t (*cudnnDestroyTensorDescriptor)(Descriptor);
  cudnnStatus_t (*cudnnCreateFilterDescriptor)(Descriptor*);
  cudnnStatus_t (*cudnnSetFilter4dDescriptor)(Descriptor, int, int, int, int, int, int);
  cudnnStatus_t (*cudnnDestroyFilterDescriptor)(Descriptor);
  cudnnStatus_t (*cudnnCreateConvolutionDescriptor)(Descriptor*);
  cudnnStatus_t (*cudnnSetConvolution2dDescriptor)(Descriptor, int, int, int, int, int, int, int,
                                                   int);
  cudnnStatus_t (*cudnnSetConvolutionMathType)(Descriptor, int);
  cudnnStatus_t (*cudnnDestroyConvolutionDescriptor)(Descriptor);
  cudnnStatus_t (*cudnnGetConvolution2dForwardOutputDim)(Descriptor, Descriptor, Descriptor, int*,
                                                         int*, int*, int*);
  cudnnStatus_t (*cudnnGetConvolutionForwardWorkspaceSize)(Descriptor, Descriptor, Descriptor,
                                                           Descriptor, Descriptor, int,
                                                           std::size_t*);
  cudnnStatus_t (*cudnnGetConvolutionBackwardFilterWorkspaceSize)(Descriptor, Descriptor,
                                                                  Descriptor, Descriptor,
                                                                  Descriptor, int, std::size_t*);
  cudnnStatus_t (*cudnnConvolutionForward)(Descriptor, const void*, Descriptor, const void*,
                                           Descriptor, const void*, Descriptor, int, void*,
                                           std::size_t, const void*, Descriptor, void*);
  cudnnStatus_t (*cudnnConvolutionBackwardFilter)(Descriptor, const void*, Descriptor, const void*,
                                                  Descriptor, const void*, Descriptor, int, void*,
                                                  std::size_t, const void*, Descriptor, void*);
  cudnnStatus_t (*cudnnConvolutionBackwardBias)(Descriptor, const void*, Descriptor, const void*,
                                                const void*, Descriptor, void*);
};

// ---- cuBLAS (libcublas.so.N) ----
using cublasStatus_t = int;
using cublasHandle_t = void*;
inline constexpr cublasStatus_t CUBLAS_STATUS_SUCCESS = 0;
inline constexpr int CUBLAS_OP_N = 0;
inline constexpr int CUBLAS_OP_T = 1;
inline constexpr int CUBLAS_PEDANTIC_MATH = 2;
inline constexpr int MAJOR_VERSION = 0;  // libraryPropertyType
inline constexpr int MINOR_VERSION = 1;
inline constexpr int PATCH_LEVEL = 2;

struct Cublas {
  cublasStatus_t (*cublasCreate_v2)(cublasHandle_t*);
  cublasStatus_t (*cublasDestroy_v2)(cublasHandle_t);
  cublasStatus_t (*cublasSetMathMode)(cublasHandle_t, int);
  cublasStatus_t (*cublasGetProperty)(int, int*);
  cublasStatus_t (*cublasSgemm_v2)(cublasHandle_t, int, int, int, int, int, const float*,
                                   const float*, int, const float*, int, const float*, float*, int);
};

}  // namespace envkit_smoke::abi
