// linear_forward / linear_backward on CUDA (the CPU bodies: linear.cpp): cuBLAS GEMMs with the
// bias + ReLU fused into one element-wise kernel; the bias gradient is a GEMV with ones.
#include "kernels/ops/cuda_common.cuh"
#include "kernels/ops/dispatch.h"

namespace sl::cuda_ops {

namespace {
__global__ void bias_act_kernel(float* out, const float* bias, int64_t n, int C, bool relu) {
  SL_GRID_STRIDE(i, n) {
    const float v = out[i] + bias[i % C];
    out[i] = relu ? (v > 0.f ? v : 0.f) : v;
  }
}

// d[i] = out[i] > 0 ? d[i] : 0   (gradient through a ReLU whose output was `out`)
__global__ void relu_backward_kernel(float* d, const float* out, int64_t n) {
  SL_GRID_STRIDE(i, n) if (!(out[i] > 0.f)) d[i] = 0.f;
}
}  // namespace

void linear_forward(const OpContext& c, float* out, const float* in, const float* weight, const float* bias,
                    int64_t N, int C_in, int C_out, bool relu) {
  if (N == 0) return;
  blas_of(c).gemm(false, true, N, C_out, C_in, 1.f, in, C_in, weight, C_in, 0.f, out, C_out);
  const int64_t n = N * C_out;
  bias_act_kernel<<<blocks_for(n), kThreads, 0, stream_of(c)>>>(out, bias, n, C_out, relu);
  SL_CUDA_CHECK_LAUNCH(bias_act_kernel);
}

void linear_backward(const OpContext& c, float* din, float* dweight, float* dbias, float* dout, const float* out,
                     const float* in, const float* weight, int64_t N, int C_in, int C_out, bool relu) {
  if (N == 0) return;
  if (c.ones_len < N) throw Error("linear_backward: the context's ones vector is shorter than N rows");
  const int64_t n = N * C_out;
  if (relu) {
    relu_backward_kernel<<<blocks_for(n), kThreads, 0, stream_of(c)>>>(dout, out, n);
    SL_CUDA_CHECK_LAUNCH(relu_backward_kernel);
  }
  cuda::Blas& blas = blas_of(c);
  // dweight [C_out, C_in] += dout^T [C_out, N] · in [N, C_in]
  blas.gemm(true, false, C_out, C_in, N, 1.f, dout, C_out, in, C_in, 1.f, dweight, C_in);
  blas.column_sum_acc(dbias, dout, C_out, c.ones, N, C_out);
  // din [N, C_in] += dout [N, C_out] · weight [C_out, C_in]
  if (din) blas.gemm(false, false, N, C_in, C_out, 1.f, dout, C_out, weight, C_in, 1.f, din, C_in);
}

}  // namespace sl::cuda_ops
