// The fused global/line linear on CUDA (the CPU bodies: global_line.cpp): the same GEMMs on
// the same column blocks of one weight (ld = G+F), small kernels for the broadcast add and the
// per-sample sum over L.
#include "kernels/ops/cuda_common.cuh"
#include "kernels/ops/dispatch.h"

namespace sl::cuda_ops {

namespace {
// scratch[b, o] += bias[o]
__global__ void add_bias_kernel(float* scratch, const float* bias, int64_t n, int C) {
  SL_GRID_STRIDE(i, n) scratch[i] += bias[i % C];
}

// out[r, o] = act(out[r, o] + scratch[r / L, o])
__global__ void add_global_act_kernel(float* out, const float* scratch, int64_t n, int L, int C, bool relu) {
  SL_GRID_STRIDE(i, n) {
    const int64_t r = i / C;
    const float v = out[i] + scratch[(r / L) * C + i % C];
    out[i] = relu && v < 0.f ? 0.f : v;
  }
}

__global__ void relu_backward_kernel(float* d, const float* out, int64_t n) {
  SL_GRID_STRIDE(i, n) if (!(out[i] > 0.f)) d[i] = 0.f;
}

// scratch[b, o] = sum over l in order of dout[b, l, o]
__global__ void sum_over_lines_kernel(float* scratch, const float* dout, int B, int L, int C) {
  SL_GRID_STRIDE(i, int64_t(B) * C) {
    const int64_t b = i / C;
    const int o = int(i % C);
    float acc = 0.f;
    for (int l = 0; l < L; ++l) acc += dout[(b * L + l) * C + o];
    scratch[i] = acc;
  }
}
}  // namespace

void global_line_linear_forward(const OpContext& c, float* out, const float* global, const float* feat,
                                const float* weight, const float* bias, int B, int L, int G, int F, int C_out,
                                bool relu, float* scratch) {
  cuda::Blas& blas = blas_of(c);
  const int64_t ldw = G + F, N = int64_t(B) * L;
  blas.gemm(false, true, B, C_out, G, 1.f, global, G, weight, ldw, 0.f, scratch, C_out);
  add_bias_kernel<<<blocks_for(int64_t(B) * C_out), kThreads, 0, stream_of(c)>>>(scratch, bias, int64_t(B) * C_out,
                                                                                  C_out);
  SL_CUDA_CHECK_LAUNCH(add_bias_kernel);
  blas.gemm(false, true, N, C_out, F, 1.f, feat, F, weight + G, ldw, 0.f, out, C_out);
  add_global_act_kernel<<<blocks_for(N * C_out), kThreads, 0, stream_of(c)>>>(out, scratch, N * C_out, L, C_out,
                                                                               relu);
  SL_CUDA_CHECK_LAUNCH(add_global_act_kernel);
}

void global_line_linear_backward(const OpContext& c, float* dglobal, float* dfeat, float* dweight, float* dbias,
                                 float* dout, const float* out, const float* global, const float* feat,
                                 const float* weight, int B, int L, int G, int F, int C_out, bool relu,
                                 float* scratch) {
  if (c.ones_len < B) throw Error("global_line_linear_backward: the context's ones vector is shorter than B");
  cuda::Blas& blas = blas_of(c);
  const int64_t ldw = G + F, N = int64_t(B) * L;
  if (relu) {
    relu_backward_kernel<<<blocks_for(N * C_out), kThreads, 0, stream_of(c)>>>(dout, out, N * C_out);
    SL_CUDA_CHECK_LAUNCH(relu_backward_kernel);
  }
  sum_over_lines_kernel<<<blocks_for(int64_t(B) * C_out), kThreads, 0, stream_of(c)>>>(scratch, dout, B, L, C_out);
  SL_CUDA_CHECK_LAUNCH(sum_over_lines_kernel);
  // dweight[:, :G] += scratch^T · global; dbias += column sums of scratch
  blas.gemm(true, false, C_out, G, B, 1.f, scratch, C_out, global, G, 1.f, dweight, ldw);
  blas.column_sum_acc(dbias, scratch, C_out, c.ones, B, C_out);
  // dweight[:, G:] += dout^T · feat
  blas.gemm(true, false, C_out, F, N, 1.f, dout, C_out, feat, F, 1.f, dweight + G, ldw);
  if (dglobal) blas.gemm(false, false, B, G, C_out, 1.f, scratch, C_out, weight, ldw, 1.f, dglobal, G);
  if (dfeat) blas.gemm(false, false, N, F, C_out, 1.f, dout, C_out, weight + G, ldw, 1.f, dfeat, F);
}

}  // namespace sl::cuda_ops
