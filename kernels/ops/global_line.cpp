// The regressor's first layer over [global broadcast over L, line features]: the CPU bodies (the
// CUDA ones: global_line.cu). Both: the global part is one [B, C_out] GEMM, the
// line part one [B*L, C_out] GEMM reading the right columns of the same weight (ld = G+F).
#include "kernels/ops/cpu_common.h"
#include "kernels/ops/dispatch.h"

namespace sl::cpu_ops {

template <class T>
void global_line_linear_forward(const OpContext& c, T* out, const T* global, const T* feat, const T* weight,
                                const T* bias, int B, int L, int G, int F, int C_out, bool relu, T* scratch) {
  const int64_t ldw = G + F;
  // scratch[b] = global[b] · Wg^T + bias  (Wg = weight[:, :G])
  gemm<T>(Trans::N, Trans::T, B, C_out, G, T(1), global, G, weight, ldw, T(0), scratch, C_out);
  for (int b = 0; b < B; ++b)
    for (int o = 0; o < C_out; ++o) scratch[int64_t(b) * C_out + o] += bias[o];
  // out = feat · Wl^T (Wl = weight[:, G:]), then + scratch[b] and act, per row block.
  const int64_t N = int64_t(B) * L;
  for_blocks(N, kRowBlock, [&](int64_t r0, int64_t r1) {
    gemm<T>(Trans::N, Trans::T, r1 - r0, C_out, F, T(1), feat + r0 * F, F, weight + G, ldw, T(0), out + r0 * C_out,
            C_out);
    for (int64_t r = r0; r < r1; ++r) {
      T* row = out + r * C_out;
      const T* gp = scratch + (r / L) * C_out;
      for (int o = 0; o < C_out; ++o) {
        const T v = row[o] + gp[o];
        row[o] = relu && v < T(0) ? T(0) : v;
      }
    }
  });
}

template <class T>
void global_line_linear_backward(const OpContext& c, T* dglobal, T* dfeat, T* dweight, T* dbias, T* dout,
                                 const T* out, const T* global, const T* feat, const T* weight, int B, int L, int G,
                                 int F, int C_out, bool relu, T* scratch) {
  const int64_t ldw = G + F;
  const int64_t N = int64_t(B) * L;
  if (relu) relu_mask(dout, out, N * C_out);
  // scratch[b] = sum_l dout[b, l]: the gradient w.r.t. the per-sample global projection.
  for (int b = 0; b < B; ++b) {
    T* s = scratch + int64_t(b) * C_out;
    for (int o = 0; o < C_out; ++o) s[o] = T(0);
    for (int l = 0; l < L; ++l) {
      const T* row = dout + (int64_t(b) * L + l) * C_out;
      for (int o = 0; o < C_out; ++o) s[o] += row[o];
    }
  }
  weight_grad<T>(dweight, dbias, scratch, C_out, global, G, B, G, C_out, ldw);   // [:, :G], bias
  weight_grad<T>(dweight + G, nullptr, dout, C_out, feat, F, N, F, C_out, ldw);  // [:, G:]
  if (dglobal) gemm<T>(Trans::N, Trans::N, B, G, C_out, T(1), scratch, C_out, weight, ldw, T(1), dglobal, G);
  if (dfeat)
    gemm_parallel<T>(Trans::N, Trans::N, N, F, C_out, T(1), dout, C_out, weight + G, ldw, T(1), dfeat, F);
}

}  // namespace sl::cpu_ops

namespace sl {
SL_DEFINE_OPS(SL_OPS_GLOBAL_LINE)
}  // namespace sl
