// Internal to kernels/ops/*.cu: launch helpers. Kernels are kept plain (grid-stride loops,
// fixed per-thread summation order, no atomics) so that each can be checked by reading and
// results do not depend on scheduling; the GEMMs, where the time goes, are cuBLAS.
#pragma once
#include <cstdint>

#include "kernels/backend.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/runtime.h"

namespace sl::cuda_ops {

constexpr int kThreads = 256;

inline cudaStream_t stream_of(const OpContext& c) { return static_cast<cudaStream_t>(c.stream); }

inline cuda::Blas& blas_of(const OpContext& c) {
  if (!c.blas) throw Error("CUDA op without a cuBLAS handle in its OpContext");
  return *c.blas;
}

// Blocks for n elements of a grid-stride loop (capped; the loop covers the rest).
inline unsigned blocks_for(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return unsigned(b < 1 ? 1 : (b > 65535 * 4 ? 65535 * 4 : b));
}

#define SL_GRID_STRIDE(i, n) \
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < (n); i += int64_t(gridDim.x) * blockDim.x)

}  // namespace sl::cuda_ops
