// linear_forward / linear_backward: the CPU bodies (the CUDA ones: linear.cu). Both: one GEMM for the output, bias + ReLU fused after it; backward = ReLU mask,
// dweight GEMM, bias column sum, din GEMM.
#include <vector>

#include "kernels/ops/cpu_common.h"
#include "kernels/ops/dispatch.h"

namespace sl::cpu_ops {

namespace {

// out[r, :] = bias + in[r, :] · W^T for tiny C_in (the GEMM library is poor at K <= 8).
template <class T>
void small_k_forward(T* out, const T* in, const T* weight, const T* bias, int64_t r0, int64_t r1, int C_in,
                     int C_out, bool relu) {
  std::vector<T> wt(size_t(C_in) * C_out);  // transposed weight [C_in, C_out]
  for (int o = 0; o < C_out; ++o)
    for (int k = 0; k < C_in; ++k) wt[size_t(k) * C_out + o] = weight[size_t(o) * C_in + k];
  for (int64_t r = r0; r < r1; ++r) {
    T* y = out + r * C_out;
    const T* x = in + r * C_in;
    for (int o = 0; o < C_out; ++o) y[o] = bias[o];
    for (int k = 0; k < C_in; ++k) {
      const T xk = x[k];
      const T* w = wt.data() + size_t(k) * C_out;
      for (int o = 0; o < C_out; ++o) y[o] += xk * w[o];
    }
    if (relu)
      for (int o = 0; o < C_out; ++o) y[o] = y[o] > T(0) ? y[o] : T(0);
  }
}

template <class T>
void bias_act_rows(T* y, const T* bias, int64_t rows, int C, bool relu) {
  for (int64_t r = 0; r < rows; ++r) {
    T* row = y + r * C;
    if (relu)
      for (int o = 0; o < C; ++o) {
        const T v = row[o] + bias[o];
        row[o] = v > T(0) ? v : T(0);
      }
    else
      for (int o = 0; o < C; ++o) row[o] += bias[o];
  }
}
}  // namespace

template <class T>
void linear_forward(const OpContext& c, T* out, const T* in, const T* weight, const T* bias, int64_t N, int C_in,
                    int C_out, bool relu) {
  for_blocks(N, kRowBlock, [&](int64_t r0, int64_t r1) {
    if (C_in <= 8) {
      small_k_forward(out, in, weight, bias, r0, r1, C_in, C_out, relu);
    } else {
      gemm<T>(Trans::N, Trans::T, r1 - r0, C_out, C_in, T(1), in + r0 * C_in, C_in, weight, C_in, T(0),
              out + r0 * C_out, C_out);
      bias_act_rows(out + r0 * C_out, bias, r1 - r0, C_out, relu);
    }
  });
}

template <class T>
void linear_backward(const OpContext& c, T* din, T* dweight, T* dbias, T* dout, const T* out, const T* in,
                     const T* weight, int64_t N, int C_in, int C_out, bool relu) {
  if (relu) relu_mask(dout, out, N * C_out);
  if (din) gemm_parallel<T>(Trans::N, Trans::N, N, C_in, C_out, T(1), dout, C_out, weight, C_in, T(1), din, C_in);
  weight_grad(dweight, dbias, dout, C_out, in, C_in, N, C_in, C_out, C_in);
}

}  // namespace sl::cpu_ops

namespace sl {
SL_DEFINE_OPS(SL_OPS_LINEAR)
}  // namespace sl
