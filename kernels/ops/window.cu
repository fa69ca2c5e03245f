// The line window on CUDA (the CPU bodies: window.cpp): one thread per output element, the
// backward a gather over the 2W+1 slots in ascending order (no atomics, fixed order).
#include "kernels/ops/cuda_common.cuh"
#include "kernels/ops/dispatch.h"

namespace sl::cuda_ops {

namespace {
__global__ void line_window_forward_kernel(float* out, const float* feat, const float* local, int64_t N, int L, int F,
                                           int C, int W) {
  const int64_t width = F + int64_t(2 * W + 1) * C;
  SL_GRID_STRIDE(i, N * width) {
    const int64_t r = i / width, k = i % width;
    if (k < F) {
      out[i] = feat[r * F + k];
    } else {
      const int j = int((k - F) / C), ch = int((k - F) % C);
      const int l = int(r % L), m = l + j - W;
      out[i] = m < 0 || m >= L ? 0.f : local[(r - l + m) * C + ch];
    }
  }
}

__global__ void line_window_dfeat_kernel(float* dfeat, const float* dout, int64_t N, int F, int64_t width) {
  SL_GRID_STRIDE(i, N * F) dfeat[i] += dout[(i / F) * width + i % F];
}

__global__ void line_window_dlocal_kernel(float* dlocal, const float* dout, int64_t N, int L, int F, int C, int W) {
  const int64_t width = F + int64_t(2 * W + 1) * C;
  SL_GRID_STRIDE(i, N * C) {
    const int64_t r = i / C;
    const int ch = int(i % C), m = int(r % L);
    float acc = 0.f;
    for (int j = 0; j <= 2 * W; ++j) {
      const int l = m - j + W;
      if (l >= 0 && l < L) acc += dout[(r - m + l) * width + F + int64_t(j) * C + ch];
    }
    dlocal[i] += acc;
  }
}
}  // namespace

void line_window_forward(const OpContext& c, float* out, const float* feat, const float* local, int B, int L, int F,
                         int C, int W) {
  const int64_t N = int64_t(B) * L, n = N * (F + int64_t(2 * W + 1) * C);
  line_window_forward_kernel<<<blocks_for(n), kThreads, 0, stream_of(c)>>>(out, feat, local, N, L, F, C, W);
  SL_CUDA_CHECK_LAUNCH(line_window_forward_kernel);
}

void line_window_backward(const OpContext& c, float* dfeat, float* dlocal, const float* dout, int B, int L, int F,
                          int C, int W) {
  const int64_t N = int64_t(B) * L, width = F + int64_t(2 * W + 1) * C;
  if (dfeat) {
    line_window_dfeat_kernel<<<blocks_for(N * F), kThreads, 0, stream_of(c)>>>(dfeat, dout, N, F, width);
    SL_CUDA_CHECK_LAUNCH(line_window_dfeat_kernel);
  }
  line_window_dlocal_kernel<<<blocks_for(N * C), kThreads, 0, stream_of(c)>>>(dlocal, dout, N, L, F, C, W);
  SL_CUDA_CHECK_LAUNCH(line_window_dlocal_kernel);
}

}  // namespace sl::cuda_ops
