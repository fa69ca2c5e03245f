// The line window (the CPU bodies; the CUDA ones: window.cu): each line point's row of the
// regressor's input gathers its own line feature and the local features of its 2W+1 neighbours.
// Copies and sums in a fixed order per output row: no blocking choice changes a bit.
#include "kernels/ops/cpu_common.h"
#include "kernels/ops/dispatch.h"

namespace sl::cpu_ops {

template <class T>
void line_window_forward(const OpContext& c, T* out, const T* feat, const T* local, int B, int L, int F, int C,
                         int W) {
  const int64_t N = int64_t(B) * L, width = F + int64_t(2 * W + 1) * C;
  for_blocks(N, kRowBlock, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int l = int(r % L);
      T* o = out + r * width;
      std::copy(feat + r * F, feat + (r + 1) * F, o);
      for (int j = 0; j <= 2 * W; ++j) {
        T* slot = o + F + int64_t(j) * C;
        const int m = l + j - W;  // the neighbour this slot holds
        if (m < 0 || m >= L)
          std::fill(slot, slot + C, T(0));
        else
          std::copy(local + (r - l + m) * C, local + (r - l + m + 1) * C, slot);
      }
    }
  });
}

template <class T>
void line_window_backward(const OpContext& c, T* dfeat, T* dlocal, const T* dout, int B, int L, int F, int C,
                          int W) {
  const int64_t N = int64_t(B) * L, width = F + int64_t(2 * W + 1) * C;
  for_blocks(N, kRowBlock, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int m = int(r % L);
      if (dfeat)
        for (int k = 0; k < F; ++k) dfeat[r * F + k] += dout[r * width + k];
      // local[m] sits in slot j of row l = m - j + W
      T* d = dlocal + r * C;
      for (int j = 0; j <= 2 * W; ++j) {
        const int l = m - j + W;
        if (l < 0 || l >= L) continue;
        const T* g = dout + (r - m + l) * width + F + int64_t(j) * C;
        for (int k = 0; k < C; ++k) d[k] += g[k];
      }
    }
  });
}

}  // namespace sl::cpu_ops

namespace sl {
SL_DEFINE_OPS(SL_OPS_WINDOW)
}  // namespace sl
