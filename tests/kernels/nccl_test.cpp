// NCCL on one GPU (kernels/cuda/nccl.cpp): the library loads, a communicator over a world of one
// (the process alone, no MPI) is made, and an in-place sum enqueued on a stream leaves random data
// exactly as it was (one rank: the sum is the data). Two ranks on two GPUs: tests/dist. Skipped,
// saying why, in a build without NCCL or on a machine without a CUDA device.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "device/device.h"
#include "graph/comm.h"
#include "kernels/cuda/nccl.h"
#include "tests/kernels/test_util.h"
#ifdef SL_WITH_CUDA
#include <cuda_runtime.h>

#include "kernels/cuda/cuda_check.h"
#endif

namespace sl {
namespace {

TEST(Nccl, OneRankCommunicatorSumsInPlaceOnAStream) {
  if (!nccl::available()) GTEST_SKIP() << "this build has no NCCL (it needs CUDA, MPI and nccl.h at configure time)";
#ifdef SL_WITH_CUDA
  std::string why;
  if (cuda_device_count(&why) == 0) GTEST_SKIP() << "no CUDA device: " << why;
  const size_t n = (size_t(1) << 20) + 3;  // not a multiple of anything NCCL slices by
  const std::vector<float> h = test::random_vec<float>(n, 17);
  float* d = nullptr;
  cudaStream_t st = nullptr;
  SL_CUDA_CHECK(cudaSetDevice(0));
  SL_CUDA_CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  SL_CUDA_CHECK(cudaMalloc(&d, n * sizeof(float)));
  SL_CUDA_CHECK(cudaMemcpy(d, h.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  void* comm = nccl::create(solo_comm(), 0);
  ASSERT_NE(comm, nullptr);
  for (int i = 0; i < 3; ++i) nccl::sum(comm, d, n, st);
  SL_CUDA_CHECK(cudaStreamSynchronize(st));
  std::vector<float> back(n, -1.f);
  SL_CUDA_CHECK(cudaMemcpy(back.data(), d, n * sizeof(float), cudaMemcpyDeviceToHost));
  nccl::destroy(comm);
  cudaFree(d);
  cudaStreamDestroy(st);
  EXPECT_EQ(std::memcmp(back.data(), h.data(), n * sizeof(float)), 0) << "a one-rank sum changed the data";
#else
  GTEST_SKIP() << "this build has no CUDA backend";
#endif
}

}  // namespace
}  // namespace sl
