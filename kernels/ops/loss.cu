// MSE loss, the variance head's likelihood gradient, Adam and fill on CUDA (the CPU bodies: loss.cpp).
#include <cmath>

#include "kernels/ops/cuda_common.cuh"
#include "kernels/ops/dispatch.h"

namespace sl::cuda_ops {

namespace {
constexpr int kLossThreads = 1024;

// ONE block: each thread sums a fixed strided subset in double, then a fixed tree reduction.
__global__ void mse_loss_kernel(double* sum, int32_t* count, float* last, const float* pred, const float* target,
                                int64_t n) {
  __shared__ double part[kLossThreads];
  double acc = 0.0;
  for (int64_t i = threadIdx.x; i < n; i += kLossThreads) {
    const double d = double(pred[i]) - double(target[i]);
    acc += d * d;
  }
  part[threadIdx.x] = acc;
  __syncthreads();
  for (int s = kLossThreads / 2; s > 0; s >>= 1) {
    if (int(threadIdx.x) < s) part[threadIdx.x] += part[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    const float loss = float(part[0] / double(n));
    *last = loss;
    *sum += double(loss);
    *count += 1;
  }
}

__global__ void mse_backward_kernel(float* dpred, const float* pred, const float* target, int64_t n, float s) {
  SL_GRID_STRIDE(i, n) dpred[i] += s * (pred[i] - target[i]);
}

// In double, as the CPU body.
__global__ void gaussian_nll_backward_kernel(float* dlogvar, const float* logvar, const float* pred,
                                             const float* target, int64_t n, double s) {
  SL_GRID_STRIDE(i, n) {
    const double r = double(pred[i]) - double(target[i]);
    dlogvar[i] += float(s * (1.0 - r * r * exp(-fmax(double(logvar[i]), -20.0))));
  }
}

// t += 1 and the step's scalars, in double like adam_update on the CPU. A separate one-thread
// kernel, so no thread of the update grid reads t while another writes it; both are captured
// in the step's graph, so every replay advances t.
__global__ void adam_advance_kernel(int64_t* step, float* scalars, float lr, float beta1, float beta2) {
  const int64_t t = *step + 1;
  *step = t;
  const double bc1 = 1.0 - pow(double(beta1), double(t));
  const double bc2 = 1.0 - pow(double(beta2), double(t));
  scalars[0] = float(double(lr) / bc1);
  scalars[1] = float(sqrt(bc2));
}

// The float operations of adam_update, in its order; the _rn intrinsics forbid FMA contraction.
__global__ void adam_kernel(float* params, float* exp_avg, float* exp_avg_sq, const float* grads, int64_t n,
                            const float* scalars, float b1, float b2, float eps, float wd) {
  const float step_size = scalars[0], bc2_sqrt = scalars[1];
  SL_GRID_STRIDE(i, n) {
    float g = grads[i];
    if (wd != 0.f) g = __fadd_rn(g, __fmul_rn(wd, params[i]));
    const float m = __fadd_rn(__fmul_rn(b1, exp_avg[i]), __fmul_rn(__fsub_rn(1.f, b1), g));
    const float v = __fadd_rn(__fmul_rn(b2, exp_avg_sq[i]), __fmul_rn(__fmul_rn(__fsub_rn(1.f, b2), g), g));
    exp_avg[i] = m;
    exp_avg_sq[i] = v;
    const float denom = __fadd_rn(__fdiv_rn(__fsqrt_rn(v), bc2_sqrt), eps);
    params[i] = __fsub_rn(params[i], __fmul_rn(step_size, __fdiv_rn(m, denom)));
  }
}

__global__ void fill_kernel(float* p, float value, int64_t n) { SL_GRID_STRIDE(i, n) p[i] = value; }

// Rounded as the CPU body: (a * x) + (b * y), no fused multiply-add.
__global__ void axpby_kernel(float* y, float a, const float* x, float b, int64_t n) {
  if (b == 0.f) {
    SL_GRID_STRIDE(i, n) y[i] = __fmul_rn(a, x[i]);
  } else {
    SL_GRID_STRIDE(i, n) y[i] = __fadd_rn(__fmul_rn(a, x[i]), __fmul_rn(b, y[i]));
  }
}
}  // namespace

void mse_loss(const OpContext& c, const LossState<float>& st, const float* pred, const float* target, int64_t n) {
  mse_loss_kernel<<<1, kLossThreads, 0, stream_of(c)>>>(st.sum, st.count, st.last, pred, target, n);
  SL_CUDA_CHECK_LAUNCH(mse_loss_kernel);
}

void mse_backward(const OpContext& c, float* dpred, const float* pred, const float* target, int64_t n,
                  float dloss) {
  const float s = dloss * 2.f / float(n);  // as the CPU computes it
  mse_backward_kernel<<<blocks_for(n), kThreads, 0, stream_of(c)>>>(dpred, pred, target, n, s);
  SL_CUDA_CHECK_LAUNCH(mse_backward_kernel);
}

void gaussian_nll_backward(const OpContext& c, float* dlogvar, const float* logvar, const float* pred,
                           const float* target, int64_t n, float dloss) {
  if (n == 0) return;
  gaussian_nll_backward_kernel<<<blocks_for(n), kThreads, 0, stream_of(c)>>>(dlogvar, logvar, pred, target, n,
                                                                             double(dloss) * 0.5 / double(n));
  SL_CUDA_CHECK_LAUNCH(gaussian_nll_backward_kernel);
}

void adam_step(const OpContext& c, const AdamState& st, float* params, float* exp_avg, float* exp_avg_sq,
               const float* grads, size_t n, const AdamConfig& cfg) {
  adam_advance_kernel<<<1, 1, 0, stream_of(c)>>>(st.step, st.scalars, cfg.lr, cfg.beta1, cfg.beta2);
  SL_CUDA_CHECK_LAUNCH(adam_advance_kernel);
  adam_kernel<<<blocks_for(int64_t(n)), kThreads, 0, stream_of(c)>>>(params, exp_avg, exp_avg_sq, grads, int64_t(n),
                                                                      st.scalars, cfg.beta1, cfg.beta2, cfg.eps,
                                                                      cfg.weight_decay);
  SL_CUDA_CHECK_LAUNCH(adam_kernel);
}

void fill(const OpContext& c, float* p, float value, size_t n) {
  if (n == 0) return;
  fill_kernel<<<blocks_for(int64_t(n)), kThreads, 0, stream_of(c)>>>(p, value, int64_t(n));
  SL_CUDA_CHECK_LAUNCH(fill_kernel);
}

void axpby(const OpContext& c, float* y, float a, const float* x, float b, size_t n) {
  if (n == 0) return;
  axpby_kernel<<<blocks_for(int64_t(n)), kThreads, 0, stream_of(c)>>>(y, a, x, b, int64_t(n));
  SL_CUDA_CHECK_LAUNCH(axpby_kernel);
}

}  // namespace sl::cuda_ops
