// CUDA versions of the LineRefiner ops (kernels/ops.h is the CPU reference they match).
// Plain C++ header: no CUDA types leak, so any .cpp can include it; the definitions exist only
// when the build has CUDA (SL_WITH_CUDA). Conventions, as on the CPU:
//  - every pointer is a DEVICE pointer; activations are row-major [rows, channels]; weights are
//    PyTorch's Conv1d layout [C_out, C_in];
//  - every op only ENQUEUES work on `stream` (a cudaStream_t passed as void*; must not be null
//    when the work is captured into a CUDA graph) and never synchronizes the host;
//  - every backward ACCUMULATES (+=) into its gradient outputs; callers zero them first.
// Errors (bad launch, cuBLAS failure) throw sl::Error naming the call, file and line.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/adam.h"

namespace sl::cuda {

enum class Precision { FP32, TF32 };
// "fp32" | "tf32" (bf16 is not implemented); throws sl::Error otherwise.
Precision parse_precision(const std::string& s);

// One GEMM (or GEMV) as issued, row-major like sl::gemm; used to time the GEMM floor.
struct GemmShape {
  bool gemv = false;   // a column sum: y[M] += A[K, M]^T · ones[K] (N = 1)
  bool ta = false, tb = false;
  int M = 0, N = 0, K = 0;
};

// One cuBLAS handle with its own explicit workspace (kCublasWorkspaceBytes) on `device`.
// Not thread-safe: one Blas per thread / per model.
class Blas {
 public:
  Blas(int device, Precision precision = Precision::FP32);
  ~Blas();
  Blas(const Blas&) = delete;
  Blas& operator=(const Blas&) = delete;
  // Route the following calls to `stream` (cublasSetStream, then cublasSetWorkspace again,
  // because cublasSetStream resets the workspace to cuBLAS's own pool).
  void bind(void* stream);
  void set_precision(Precision p);
  Precision precision() const { return precision_; }
  // Row-major C[M,N] = alpha op(A)[M,K] op(B)[K,N] + beta C (same contract as sl::gemm).
  void gemm(bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda,
            const float* B, int ldb, float beta, float* C, int ldc);
  // dbias[C] += sum over rows of d[rows, C]  (a GEMV with a ones vector of >= rows floats).
  void column_sum_acc(float* dbias, const float* d, const float* ones, int rows, int C);
  // When non-null, every gemm/column_sum_acc appends its shape here.
  std::vector<GemmShape>* record = nullptr;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  Precision precision_;
};

// ---- point-wise linear + bias, optional fused ReLU ----------------------------------------
// out [N, C_out] = act(in [N, C_in] · W [C_out, C_in]^T + bias [C_out])
void linear_forward(Blas& blas, float* out, const float* in, const float* weight,
                    const float* bias, int64_t N, int C_in, int C_out, bool relu, void* stream);
// din [N, C_in] += (nullable); dweight [C_out, C_in] +=; dbias [C_out] +=;
// dout [N, C_out] is OVERWRITTEN with the pre-activation gradient when relu;
// out [N, C_out] (saved forward output, for the ReLU mask); ones [>= N] all 1.0f.
void linear_backward(Blas& blas, float* din, float* dweight, float* dbias, float* dout,
                     const float* out, const float* in, const float* weight, const float* ones,
                     int64_t N, int C_in, int C_out, bool relu, void* stream);

// ---- out = max_p relu(in · W^T + b) with argmax ---------------------------------------------
// out [B, C_out]; argmax [B, C_out] = first p attaining the max of the pre-activation;
// pre_max [B*P, C_out] work memory (holds in · W^T afterwards); in [B, P, C_in].
void linear_relu_max_forward(Blas& blas, float* out, int32_t* argmax, float* pre_max,
                             const float* in, const float* weight, const float* bias, int B,
                             int P, int C_in, int C_out, void* stream);
// Sparse backward: only the argmax row of each (b, channel) with out > 0 receives gradient.
// din [B, P, C_in] += (dense layout, nullable); dweight [C_out, C_in] +=; dbias [C_out] +=;
// dout [B, C_out]; out, argmax [B, C_out] (saved); in [B, P, C_in]; weight [C_out, C_in].
// Deterministic: no atomics (each thread owns its outputs and loops in a fixed order).
void linear_relu_max_backward(float* din, float* dweight, float* dbias, const float* dout,
                              const float* out, const int32_t* argmax, const float* in,
                              const float* weight, int B, int P, int C_in, int C_out,
                              void* stream);

// ---- broadcast-concat: out [B, L, G+F] = [global [B, G] over L, feat [B, L, F]] ------------
void concat_forward(float* out, const float* global, const float* feat, int B, int L, int G,
                    int F, void* stream);
// dglobal [B, G] += sum_l dout[b, l, :G]; dfeat [B, L, F] += dout[b, l, G:].
void concat_backward(float* dglobal, float* dfeat, const float* dout, int B, int L, int G, int F,
                     void* stream);

// ---- mean squared error ---------------------------------------------------------------------
// Device-side loss bookkeeping (lives in the model's small state block).
struct LossState {
  double* sum;      // += this step's loss (double)
  int* count;       // += 1
  float* last;      // = this step's loss, float(sum_sq / n) exactly like sl::mse_forward
};
// One block, fixed reduction order (deterministic), double accumulation.
void mse_loss(LossState st, const float* pred, const float* target, int64_t n, void* stream);
// dpred [n] += 2 (pred - target) / n
void mse_backward(float* dpred, const float* pred, const float* target, int64_t n, void* stream);

// ---- Adam (PyTorch semantics, see kernels/adam.h) -------------------------------------------
// step [1] (int64, device) += 1, then scalars[0] = lr / (1 - b1^step),
// scalars[1] = sqrt(1 - b2^step), computed in double as adam_update does on the CPU.
// A separate 1-thread kernel (not the update kernel itself) so that no thread of the update
// grid can read t while another writes it; both are captured in the step's graph, so every
// replay advances t.
void adam_advance_step(int64_t* step, float* scalars, const AdamConfig& cfg, void* stream);
// The flat update over n elements, with the same float operations (no FMA contraction) as
// sl::adam_update.
void adam_update(float* params, float* exp_avg, float* exp_avg_sq, const float* grads, size_t n,
                 const float* scalars, const AdamConfig& cfg, void* stream);

// ---- small helpers --------------------------------------------------------------------------
void fill(float* p, float value, size_t n, void* stream);

}  // namespace sl::cuda
