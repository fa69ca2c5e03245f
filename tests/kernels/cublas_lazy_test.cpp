// cuBLAS, loaded on first use (kernels/cuda/cublas_lazy.cpp): the forwarding entry points reach
// the real library with no GPU; whether a process maps cuBLAS at start is checked on the CLI
// (doctor).
#include <gtest/gtest.h>

#include <string>

#include "device/device.h"
#ifdef SL_WITH_CUDA
#include "kernels/cuda/cublas_lazy.h"
#include "kernels/cuda/cuda_check.h"
#endif

namespace sl {
namespace {

TEST(CublasLazy, ForwardsToTheRealLibraryWithOrWithoutAGpu) {
#ifndef SL_WITH_CUDA
  GTEST_SKIP() << "this build has no CUDA backend";
#else
  const std::string path = cuda::cublas_path();
  EXPECT_NE(path.find("libcublas.so."), std::string::npos) << path;
  EXPECT_TRUE(cuda::cublas_loaded());
  EXPECT_STREQ(cublasGetStatusName(CUBLAS_STATUS_SUCCESS), "CUBLAS_STATUS_SUCCESS");
  EXPECT_STREQ(cublasGetStatusName(CUBLAS_STATUS_INVALID_VALUE), "CUBLAS_STATUS_INVALID_VALUE");
  EXPECT_STRNE(cublasGetStatusString(CUBLAS_STATUS_INVALID_VALUE), "cuBLAS could not be loaded");
  cublasHandle_t h = nullptr;
  const cublasStatus_t st = cublasCreate(&h);
  std::string why;
  if (cuda_device_count(&why) > 0) {
    ASSERT_EQ(st, CUBLAS_STATUS_SUCCESS) << cublasGetStatusName(st);
    EXPECT_EQ(cublasDestroy(h), CUBLAS_STATUS_SUCCESS);
  } else {
    EXPECT_NE(st, CUBLAS_STATUS_SUCCESS) << "no CUDA device (" << why << "), yet cublasCreate succeeded";
  }
#endif
}

}  // namespace
}  // namespace sl
