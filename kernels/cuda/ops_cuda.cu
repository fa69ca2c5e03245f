// CUDA kernels of the LineRefiner ops. Kept deliberately simple (one thread per output element,
// grid-stride loops, fixed summation order, no atomics) so that each can be checked by reading;
// the GEMMs, where the time goes, are cuBLAS.
#include "kernels/cuda/ops_cuda.h"

#include <cmath>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/workspace_layout.h"

namespace sl::cuda {

namespace {

constexpr int kThreads = 256;

cudaStream_t as_stream(void* s) { return static_cast<cudaStream_t>(s); }

// Blocks for n elements of a grid-stride loop (capped; the loop covers the rest).
unsigned blocks_for(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return unsigned(b < 1 ? 1 : (b > 65535 * 4 ? 65535 * 4 : b));
}

__global__ void bias_act_kernel(float* out, const float* bias, int64_t n, int C, bool relu) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const float v = out[i] + bias[i % C];
    out[i] = relu ? (v > 0.f ? v : 0.f) : v;
  }
}

// d[i] = out[i] > 0 ? d[i] : 0   (gradient through a ReLU whose output was `out`)
__global__ void relu_backward_kernel(float* d, const float* out, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    if (!(out[i] > 0.f)) d[i] = 0.f;
}

// One thread per (b, o): scan the P rows in order; strict > keeps the FIRST maximum, like the
// CPU. Bias and ReLU after the max: max_p relu(y + b) == relu(max_p y + b).
__global__ void max_over_points_kernel(float* out, int32_t* argmax, const float* y,
                                       const float* bias, int B, int P, int C) {
  const int64_t n = int64_t(B) * C;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t b = i / C;
    const int o = int(i % C);
    const float* col = y + b * P * C + o;
    float best = -INFINITY;
    int32_t arg = 0;
    for (int p = 0; p < P; ++p) {
      const float v = col[int64_t(p) * C];
      if (v > best) {
        best = v;
        arg = p;
      }
    }
    const float v = best + bias[o];
    out[i] = v > 0.f ? v : 0.f;
    argmax[i] = arg;
  }
}

// dweight / dbias of the fused max layer. One thread per (o, k), k in [0, C_in]; k == C_in is
// the bias. Loops over the samples in order.
__global__ void max_backward_weight_kernel(float* dweight, float* dbias, const float* dout,
                                           const float* out, const int32_t* argmax,
                                           const float* in, int B, int P, int C_in, int C_out) {
  const int64_t n = int64_t(C_out) * (C_in + 1);
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; t < n;
       t += int64_t(gridDim.x) * blockDim.x) {
    const int o = int(t / (C_in + 1));
    const int k = int(t % (C_in + 1));
    float acc = 0.f;
    for (int b = 0; b < B; ++b) {
      const int64_t i = int64_t(b) * C_out + o;
      if (!(out[i] > 0.f)) continue;
      const float x = k < C_in ? in[(int64_t(b) * P + argmax[i]) * C_in + k] : 1.f;
      acc += dout[i] * x;
    }
    if (k < C_in)
      dweight[int64_t(o) * C_in + k] += acc;
    else
      dbias[o] += acc;
  }
}

// din of the fused max layer, scattered to the argmax rows only. One thread per (b, k): it
// owns column k of sample b's rows, so several channels sharing an argmax row never race.
__global__ void max_backward_input_kernel(float* din, const float* dout, const float* out,
                                          const int32_t* argmax, const float* weight, int B,
                                          int P, int C_in, int C_out) {
  const int64_t n = int64_t(B) * C_in;
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; t < n;
       t += int64_t(gridDim.x) * blockDim.x) {
    const int64_t b = t / C_in;
    const int k = int(t % C_in);
    for (int o = 0; o < C_out; ++o) {
      const int64_t i = b * C_out + o;
      if (!(out[i] > 0.f)) continue;
      din[(b * P + argmax[i]) * C_in + k] += dout[i] * weight[int64_t(o) * C_in + k];
    }
  }
}

__global__ void concat_forward_kernel(float* out, const float* global, const float* feat, int B,
                                      int L, int G, int F) {
  const int W = G + F;
  const int64_t n = int64_t(B) * L * W;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / W;  // row = b * L + l
    const int c = int(i % W);
    out[i] = c < G ? global[(r / L) * G + c] : feat[r * F + (c - G)];
  }
}

// dglobal [B, G] += sum over l in order.
__global__ void concat_backward_global_kernel(float* dglobal, const float* dout, int B, int L,
                                              int G, int F) {
  const int W = G + F;
  const int64_t n = int64_t(B) * G;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t b = i / G;
    const int g = int(i % G);
    float acc = 0.f;
    for (int l = 0; l < L; ++l) acc += dout[(b * L + l) * W + g];
    dglobal[i] += acc;
  }
}

__global__ void concat_backward_feat_kernel(float* dfeat, const float* dout, int64_t rows, int G,
                                            int F) {
  const int64_t n = rows * F;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / F;
    dfeat[i] += dout[r * (G + F) + G + (i % F)];
  }
}

constexpr int kLossThreads = 1024;

// ONE block: each thread sums a fixed strided subset in double, then a fixed tree reduction.
__global__ void mse_loss_kernel(double* sum, int* count, float* last, const float* pred,
                                const float* target, int64_t n) {
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
    const double loss = part[0] / double(n);
    *last = float(loss);
    *sum += loss;
    *count += 1;
  }
}

__global__ void mse_backward_kernel(float* dpred, const float* pred, const float* target,
                                    int64_t n, float s) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    dpred[i] += s * (pred[i] - target[i]);
}

__global__ void adam_advance_kernel(int64_t* step, float* scalars, float lr, float beta1,
                                    float beta2) {
  const int64_t t = *step + 1;
  *step = t;
  const double bc1 = 1.0 - pow(double(beta1), double(t));
  const double bc2 = 1.0 - pow(double(beta2), double(t));
  scalars[0] = float(double(lr) / bc1);
  scalars[1] = float(sqrt(bc2));
}

// Same float operations, in the same order, as sl::adam_update; the _rn intrinsics forbid
// FMA contraction so the result matches the CPU's (which has no FMA in this build).
__global__ void adam_kernel(float* params, float* exp_avg, float* exp_avg_sq, const float* grads,
                            size_t n, const float* scalars, float b1, float b2, float eps,
                            float wd) {
  const float step_size = scalars[0], bc2_sqrt = scalars[1];
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    float g = grads[i];
    if (wd != 0.f) g = __fadd_rn(g, __fmul_rn(wd, params[i]));
    const float m = __fadd_rn(__fmul_rn(b1, exp_avg[i]), __fmul_rn(__fsub_rn(1.f, b1), g));
    const float v = __fadd_rn(__fmul_rn(b2, exp_avg_sq[i]),
                              __fmul_rn(__fmul_rn(__fsub_rn(1.f, b2), g), g));
    exp_avg[i] = m;
    exp_avg_sq[i] = v;
    const float denom = __fadd_rn(__fdiv_rn(__fsqrt_rn(v), bc2_sqrt), eps);
    params[i] = __fsub_rn(params[i], __fmul_rn(step_size, __fdiv_rn(m, denom)));
  }
}

__global__ void fill_kernel(float* p, float value, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    p[i] = value;
}

}  // namespace

Precision parse_precision(const std::string& s) {
  if (s == "fp32") return Precision::FP32;
  if (s == "tf32") return Precision::TF32;
  fail("cuda precision", "'" + s + "' is not supported (fp32 | tf32; bf16 is not implemented)");
}

// ---- Blas -----------------------------------------------------------------------------------
struct Blas::Impl {
  int device = 0;
  cublasHandle_t handle = nullptr;
  void* workspace = nullptr;
};

Blas::Blas(int device, Precision precision) : impl_(std::make_unique<Impl>()), precision_(precision) {
  impl_->device = device;
  SL_CUDA_CHECK(cudaSetDevice(device));
  SL_CUBLAS_CHECK(cublasCreate(&impl_->handle));
  try {
    SL_CUDA_CHECK(cudaMalloc(&impl_->workspace, kCublasWorkspaceBytes));
    set_precision(precision);
    bind(nullptr);
  } catch (...) {
    if (impl_->workspace) cudaFree(impl_->workspace);
    cublasDestroy(impl_->handle);
    throw;
  }
}

Blas::~Blas() {
  if (!impl_) return;
  // Destructors must not throw: errors here are ignored (the context may be going away).
  cudaSetDevice(impl_->device);
  if (impl_->handle) cublasDestroy(impl_->handle);
  if (impl_->workspace) cudaFree(impl_->workspace);
}

void Blas::bind(void* stream) {
  SL_CUBLAS_CHECK(cublasSetStream(impl_->handle, as_stream(stream)));
  SL_CUBLAS_CHECK(cublasSetWorkspace(impl_->handle, impl_->workspace, kCublasWorkspaceBytes));
}

void Blas::set_precision(Precision p) {
  SL_CUBLAS_CHECK(cublasSetMathMode(
      impl_->handle, p == Precision::TF32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
  precision_ = p;
}

void Blas::gemm(bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda,
                const float* B, int ldb, float beta, float* C, int ldc) {
  if (record) record->push_back({false, ta, tb, M, N, K});
  // Row-major C = op(A) op(B)  <=>  column-major C^T = op(B)^T op(A)^T: a row-major matrix is
  // its own transpose in column-major, so the operands swap and the op flags carry over.
  SL_CUBLAS_CHECK(cublasSgemm(impl_->handle, tb ? CUBLAS_OP_T : CUBLAS_OP_N,
                              ta ? CUBLAS_OP_T : CUBLAS_OP_N, N, M, K, &alpha, B, ldb, A, lda,
                              &beta, C, ldc));
}

void Blas::column_sum_acc(float* dbias, const float* d, const float* ones, int rows, int C) {
  if (record) record->push_back({true, false, false, C, 1, rows});
  // Row-major d [rows, C] is column-major [C, rows] with ld C: y[C] += d_cm · ones[rows].
  const float one = 1.f;
  SL_CUBLAS_CHECK(cublasSgemv(impl_->handle, CUBLAS_OP_N, C, rows, &one, d, C, ones, 1, &one,
                              dbias, 1));
}

// ---- ops ------------------------------------------------------------------------------------
void linear_forward(Blas& blas, float* out, const float* in, const float* weight,
                    const float* bias, int64_t N, int C_in, int C_out, bool relu, void* stream) {
  blas.gemm(false, true, int(N), C_out, C_in, 1.f, in, C_in, weight, C_in, 0.f, out, C_out);
  const int64_t n = N * C_out;
  bias_act_kernel<<<blocks_for(n), kThreads, 0, as_stream(stream)>>>(out, bias, n, C_out, relu);
  SL_CUDA_CHECK_LAUNCH(bias_act_kernel);
}

void linear_backward(Blas& blas, float* din, float* dweight, float* dbias, float* dout,
                     const float* out, const float* in, const float* weight, const float* ones,
                     int64_t N, int C_in, int C_out, bool relu, void* stream) {
  const int64_t n = N * C_out;
  if (relu) {
    relu_backward_kernel<<<blocks_for(n), kThreads, 0, as_stream(stream)>>>(dout, out, n);
    SL_CUDA_CHECK_LAUNCH(relu_backward_kernel);
  }
  // dweight [C_out, C_in] += dout^T [C_out, N] · in [N, C_in]
  blas.gemm(true, false, C_out, C_in, int(N), 1.f, dout, C_out, in, C_in, 1.f, dweight, C_in);
  blas.column_sum_acc(dbias, dout, ones, int(N), C_out);
  // din [N, C_in] += dout [N, C_out] · weight [C_out, C_in]
  if (din) blas.gemm(false, false, int(N), C_in, C_out, 1.f, dout, C_out, weight, C_in, 1.f, din, C_in);
}

void linear_relu_max_forward(Blas& blas, float* out, int32_t* argmax, float* pre_max,
                             const float* in, const float* weight, const float* bias, int B,
                             int P, int C_in, int C_out, void* stream) {
  const int64_t N = int64_t(B) * P;
  blas.gemm(false, true, int(N), C_out, C_in, 1.f, in, C_in, weight, C_in, 0.f, pre_max, C_out);
  const int64_t n = int64_t(B) * C_out;
  max_over_points_kernel<<<blocks_for(n), kThreads, 0, as_stream(stream)>>>(out, argmax, pre_max,
                                                                             bias, B, P, C_out);
  SL_CUDA_CHECK_LAUNCH(max_over_points_kernel);
}

void linear_relu_max_backward(float* din, float* dweight, float* dbias, const float* dout,
                              const float* out, const int32_t* argmax, const float* in,
                              const float* weight, int B, int P, int C_in, int C_out,
                              void* stream) {
  const int64_t nw = int64_t(C_out) * (C_in + 1);
  max_backward_weight_kernel<<<blocks_for(nw), kThreads, 0, as_stream(stream)>>>(
      dweight, dbias, dout, out, argmax, in, B, P, C_in, C_out);
  SL_CUDA_CHECK_LAUNCH(max_backward_weight_kernel);
  if (!din) return;
  const int64_t ni = int64_t(B) * C_in;
  max_backward_input_kernel<<<blocks_for(ni), kThreads, 0, as_stream(stream)>>>(
      din, dout, out, argmax, weight, B, P, C_in, C_out);
  SL_CUDA_CHECK_LAUNCH(max_backward_input_kernel);
}

void concat_forward(float* out, const float* global, const float* feat, int B, int L, int G,
                    int F, void* stream) {
  const int64_t n = int64_t(B) * L * (G + F);
  concat_forward_kernel<<<blocks_for(n), kThreads, 0, as_stream(stream)>>>(out, global, feat, B,
                                                                            L, G, F);
  SL_CUDA_CHECK_LAUNCH(concat_forward_kernel);
}

void concat_backward(float* dglobal, float* dfeat, const float* dout, int B, int L, int G, int F,
                     void* stream) {
  concat_backward_global_kernel<<<blocks_for(int64_t(B) * G), kThreads, 0, as_stream(stream)>>>(
      dglobal, dout, B, L, G, F);
  SL_CUDA_CHECK_LAUNCH(concat_backward_global_kernel);
  const int64_t rows = int64_t(B) * L;
  concat_backward_feat_kernel<<<blocks_for(rows * F), kThreads, 0, as_stream(stream)>>>(
      dfeat, dout, rows, G, F);
  SL_CUDA_CHECK_LAUNCH(concat_backward_feat_kernel);
}

void mse_loss(LossState st, const float* pred, const float* target, int64_t n, void* stream) {
  mse_loss_kernel<<<1, kLossThreads, 0, as_stream(stream)>>>(st.sum, st.count, st.last, pred,
                                                             target, n);
  SL_CUDA_CHECK_LAUNCH(mse_loss_kernel);
}

void mse_backward(float* dpred, const float* pred, const float* target, int64_t n, void* stream) {
  const float s = 1.f * 2.f / float(n);  // as sl::mse_backward computes it (dloss = 1)
  mse_backward_kernel<<<blocks_for(n), kThreads, 0, as_stream(stream)>>>(dpred, pred, target, n, s);
  SL_CUDA_CHECK_LAUNCH(mse_backward_kernel);
}

void adam_advance_step(int64_t* step, float* scalars, const AdamConfig& cfg, void* stream) {
  adam_advance_kernel<<<1, 1, 0, as_stream(stream)>>>(step, scalars, cfg.lr, cfg.beta1,
                                                      cfg.beta2);
  SL_CUDA_CHECK_LAUNCH(adam_advance_kernel);
}

void adam_update(float* params, float* exp_avg, float* exp_avg_sq, const float* grads, size_t n,
                 const float* scalars, const AdamConfig& cfg, void* stream) {
  adam_kernel<<<blocks_for(int64_t(n)), kThreads, 0, as_stream(stream)>>>(
      params, exp_avg, exp_avg_sq, grads, n, scalars, cfg.beta1, cfg.beta2, cfg.eps,
      cfg.weight_decay);
  SL_CUDA_CHECK_LAUNCH(adam_kernel);
}

void fill(float* p, float value, size_t n, void* stream) {
  fill_kernel<<<blocks_for(int64_t(n)), kThreads, 0, as_stream(stream)>>>(p, value, n);
  SL_CUDA_CHECK_LAUNCH(fill_kernel);
}

}  // namespace sl::cuda
