// Error checks for CUDA runtime and cuBLAS calls. Include only from CUDA-aware translation units
// (.cu files, or .cpp files inside #ifdef SL_WITH_CUDA). A failure throws sl::Error
// "<call> failed at <file>:<line>: <reason>", never exit(): the engine reports it like any
// other stage error.
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime.h>  // the C++ API: typed cudaMalloc<T>, also with a host compiler

#include <string>

#include "graph/error.h"

namespace sl::cuda_detail {

[[noreturn]] inline void throw_cuda(cudaError_t e, const char* call, const char* file, int line) {
  throw Error(std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": " +
              cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}

[[noreturn]] inline void throw_cublas(cublasStatus_t s, const char* call, const char* file,
                                      int line) {
  throw Error(std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": " +
              cublasGetStatusName(s) + " (" + cublasGetStatusString(s) + ")");
}

}  // namespace sl::cuda_detail

#define SL_CUDA_CHECK(call)                                                       \
  do {                                                                            \
    const cudaError_t sl_cuda_err_ = (call);                                      \
    if (sl_cuda_err_ != cudaSuccess)                                              \
      ::sl::cuda_detail::throw_cuda(sl_cuda_err_, #call, __FILE__, __LINE__);     \
  } while (0)

#define SL_CUBLAS_CHECK(call)                                                     \
  do {                                                                            \
    const cublasStatus_t sl_cublas_st_ = (call);                                  \
    if (sl_cublas_st_ != CUBLAS_STATUS_SUCCESS)                                   \
      ::sl::cuda_detail::throw_cublas(sl_cublas_st_, #call, __FILE__, __LINE__);  \
  } while (0)

// After a kernel launch: launch-configuration errors surface here, naming the kernel
// (cudaGetLastError also clears them); errors inside the kernel surface at the next
// synchronizing call.
#define SL_CUDA_CHECK_LAUNCH(kernel)                                                   \
  do {                                                                                 \
    const cudaError_t sl_cuda_err_ = cudaGetLastError();                               \
    if (sl_cuda_err_ != cudaSuccess)                                                   \
      ::sl::cuda_detail::throw_cuda(sl_cuda_err_, "launch of kernel " #kernel, __FILE__, __LINE__); \
  } while (0)
