// The LineRefiner's ops: ONE list, below, writes each op's signature once; the declarations for
// both backends, the dispatch between them and the instantiations follow from it. Every op
// takes the OpContext first, named c (kernels/backend.h: backend, precision, stream, cuBLAS
// handle), then outputs, values saved for backward, inputs, weights, sizes (llm.c style).
// The CPU body and the CUDA body of an op sit side by side (kernels/ops/<group>.cpp and .cu,
// namespaces sl::cpu_ops and sl::cuda_ops) and run the SAME algorithm; kernels/reference.h
// holds the plain loops both are tested against, case by case (tests/kernels/op_cases.h).
//
// Adding an op: one entry in its group's list, its two bodies, one case in op_cases.h.
//
// Conventions, on both backends:
//  - pointers live on the context's backend (host memory on the CPU, device memory on CUDA);
//  - activations are row-major [rows, channels] (a Conv1d with kernel 1 over points is a GEMM
//    over rows); weights use PyTorch's Conv1d layout [C_out, C_in(, 1)];
//  - EVERY backward ACCUMULATES (+=) into its gradient outputs; callers zero them first;
//  - results never depend on the thread count or on timing: fixed blocks on the CPU, fixed
//    per-thread loops and no atomics on CUDA;
//  - T = float on both backends; T = double on the CPU only (finite-difference tests). CUDA
//    with double throws sl::Error naming the op ("unsupported"), as does a CUDA context in a
//    build without CUDA.
// On the CPU an op runs on the calling thread (plus oneTBB workers) and returns when done; on
// CUDA it only enqueues on the context's stream.
#pragma once
#include <cstdint>

#include "kernels/adam.h"
#include "kernels/backend.h"

namespace sl {

// ---- the op list ------------------------------------------------------------------------------
// One entry: OP(types, return type, name, (parameters), (the parameters' names, as arguments))
//   types FLOAT_DOUBLE: a template on T, instantiated for float and double;
//         FLOAT: float only (no template).
// A group is the ops of one kernels/ops/<group>.cpp + .cu pair; SL_OPS is all of them.

// linear_forward: out [N, C_out] = act(in [N, C_in] · weight [C_out, C_in]^T + bias [C_out]),
//   point-wise linear (Conv1d kernel 1) + bias, optional fused ReLU.
// linear_backward: din [N, C_in] (nullable: not needed for network inputs), dweight
//   [C_out, C_in], dbias [C_out]; dout [N, C_out] is OVERWRITTEN with the pre-activation
//   gradient when relu; out [N, C_out] is the forward output (saved; used for the ReLU mask).
//   CUDA: c.ones must hold >= N ones (the bias gradient is a GEMV).
#define SL_OPS_LINEAR(OP, T)                                                                                   \
  OP(FLOAT_DOUBLE, void, linear_forward,                                                                       \
     (const OpContext& c, T* out, const T* in, const T* weight, const T* bias, int64_t N, int C_in, int C_out, \
      bool relu),                                                                                              \
     (c, out, in, weight, bias, N, C_in, C_out, relu))                                                         \
  OP(FLOAT_DOUBLE, void, linear_backward,                                                                      \
     (const OpContext& c, T* din, T* dweight, T* dbias, T* dout, const T* out, const T* in, const T* weight,   \
      int64_t N, int C_in, int C_out, bool relu),                                                              \
     (c, din, dweight, dbias, dout, out, in, weight, N, C_in, C_out, relu))

// linear_relu_max_forward: out [B, C_out] = max_p relu(in · W^T + b) with argmax [B, C_out] =
//   the FIRST p attaining the max of the pre-activation (ties go to the smallest p on both
//   backends); in [B, P, C_in]; weight [C_out, C_in]. scratch: CUDA needs [B*P, C_out] (the
//   GEMM's output, then a parallel max); the CPU streams row blocks through per-thread memory
//   and ignores it (nullable).
// The encoder backward runs on the distinct argmax rows of active channels only (a channel with
// out <= 0 gets no gradient), instead of all B*P rows:
// compact_argmax_rows lists them (ArgmaxRows below), rows in ascending point order per sample,
//   samples in order. Returns the number of compact rows the backward runs on: on the CPU
//   exactly the distinct rows (read on the host); on CUDA argmax_rows_capacity(B, P, G) without
//   waiting, sample b owning a fixed stride of min(P, G) rows whose unused tail is padding
//   (source -1, no channels: gathers zeros, adds nothing).
// gather_rows: dst [U, C] = rows source[u] of src (zeros where source[u] < 0).
// linear_relu_max_backward: the backward of linear_relu_max_forward over the compact rows:
//   dweight [C_out, C_in] +=, dbias [C_out] += (from the argmax row of each active (b, o),
//   samples in order); din [U, C_in] += (nullable) at the compact rows, each row summing its
//   channels in ascending order. dout [B, C_out]; out, argmax [B, C_out] (saved); in [B, P, C_in]
//   (dense, saved), or with in_compact the layer's input at the compact rows only, [U, C_in] as
//   gather_rows writes it ((b, o) reads row r.din_row[b*C_out+o]): the same values, the same
//   sums (what activation recomputation keeps, kernels/model.h).
#define SL_OPS_MAX(OP, T)                                                                                           \
  OP(FLOAT_DOUBLE, void, linear_relu_max_forward,                                                                   \
     (const OpContext& c, T* out, int32_t* argmax, const T* in, const T* weight, const T* bias, int B, int P,      \
      int C_in, int C_out, T* scratch),                                                                             \
     (c, out, argmax, in, weight, bias, B, P, C_in, C_out, scratch))                                                \
  OP(FLOAT_DOUBLE, int64_t, compact_argmax_rows,                                                                    \
     (const OpContext& c, const ArgmaxRows& r, const T* out, const int32_t* argmax, int B, int P, int G),           \
     (c, r, out, argmax, B, P, G))                                                                                  \
  OP(FLOAT_DOUBLE, void, gather_rows, (const OpContext& c, T* dst, const T* src, const int64_t* source, int64_t U, \
                                       int C),                                                                      \
     (c, dst, src, source, U, C))                                                                                   \
  OP(FLOAT_DOUBLE, void, linear_relu_max_backward,                                                                  \
     (const OpContext& c, T* din, const ArgmaxRows& r, T* dweight, T* dbias, const T* dout, const T* out,          \
      const int32_t* argmax, const T* in, bool in_compact, const T* weight, int B, int P, int C_in, int C_out),     \
     (c, din, r, dweight, dbias, dout, out, argmax, in, in_compact, weight, B, P, C_in, C_out))

// global_line_linear_forward: out [B, L, C_out] = act([global [B, G] broadcast over L,
//   feat [B, L, F]] · weight^T + bias), weight [C_out, G+F], without materialising the concat:
//   the global part is projected once per sample (B rows), not per line point. scratch
//   [B, C_out] is work memory.
// global_line_linear_backward: dglobal [B, G] (nullable), dfeat [B, L, F] (nullable), dweight
//   [C_out, G+F], dbias [C_out]; dout [B, L, C_out] is OVERWRITTEN with the pre-activation
//   gradient when relu. CUDA: c.ones must hold >= B ones.
#define SL_OPS_GLOBAL_LINE(OP, T)                                                                                  \
  OP(FLOAT_DOUBLE, void, global_line_linear_forward,                                                               \
     (const OpContext& c, T* out, const T* global, const T* feat, const T* weight, const T* bias, int B, int L,   \
      int G, int F, int C_out, bool relu, T* scratch),                                                             \
     (c, out, global, feat, weight, bias, B, L, G, F, C_out, relu, scratch))                                       \
  OP(FLOAT_DOUBLE, void, global_line_linear_backward,                                                              \
     (const OpContext& c, T* dglobal, T* dfeat, T* dweight, T* dbias, T* dout, const T* out, const T* global,     \
      const T* feat, const T* weight, int B, int L, int G, int F, int C_out, bool relu, T* scratch),               \
     (c, dglobal, dfeat, dweight, dbias, dout, out, global, feat, weight, B, L, G, F, C_out, relu, scratch))

// line_window_forward: out [B*L, F + (2W+1)*C] = [feat [B*L, F], local[l-W], ..., local[l+W]] per
//   line point l of each sample, local [B*L, C]; a neighbour beyond the line's ends is zeros (the
//   local features are ReLU outputs: zero reads as "no evidence"). What lets neighbouring line
//   points share what they see: the regressor's first layer on it is a kernel-(2W+1)
//   convolution along the line.
// line_window_backward: dfeat [B*L, F] += (nullable), dlocal [B*L, C] += the sum over the 2W+1
//   slots that hold local[l] (slots in ascending order; a gather, so no atomics); dout read only.
#define SL_OPS_WINDOW(OP, T)                                                                               \
  OP(FLOAT_DOUBLE, void, line_window_forward,                                                              \
     (const OpContext& c, T* out, const T* feat, const T* local, int B, int L, int F, int C, int W),       \
     (c, out, feat, local, B, L, F, C, W))                                                                 \
  OP(FLOAT_DOUBLE, void, line_window_backward,                                                             \
     (const OpContext& c, T* dfeat, T* dlocal, const T* dout, int B, int L, int F, int C, int W),          \
     (c, dfeat, dlocal, dout, B, L, F, C, W))

// mse_loss: the mean squared error over n elements, its bookkeeping in the context's backend
//   memory (LossState below), so a CUDA step never returns data to the host.
// mse_backward: dpred [n] += dloss * 2 (pred - target) / n.
// gaussian_nll_backward: the gradient of the mean over n elements of the Gaussian negative log
//   likelihood 0.5 (s + r^2 exp(-s)) with respect to the log variance s = logvar, r = pred - target
//   held fixed (the offsets learn from the MSE alone; the variance learns the residual they leave):
//   dlogvar [n] += dloss * 0.5 (1 - r^2 exp(-max(s, -20))) / n. The clamp inside the exponential
//   only (e^20: sigma ~ 45 um) keeps one wild residual from overflowing the gradient; the
//   gradient keeps pushing such an s up.
// adam_step: t += 1, then params, exp_avg, exp_avg_sq [n] updated in place from grads [n]
//   (PyTorch semantics, kernels/adam.h).
// fill: p [n] = value.
// axpby: y [n] = a * x + b * y, each element rounded as (a * x) + (b * y) in float; b == 0
//   writes a * x whatever y held (gradient accumulation, train/grad_sync.h).
#define SL_OPS_LOSS(OP, T)                                                                                       \
  OP(FLOAT_DOUBLE, void, mse_loss,                                                                               \
     (const OpContext& c, const LossState<T>& st, const T* pred, const T* target, int64_t n),                    \
     (c, st, pred, target, n))                                                                                   \
  OP(FLOAT_DOUBLE, void, mse_backward,                                                                           \
     (const OpContext& c, T* dpred, const T* pred, const T* target, int64_t n, T dloss),                         \
     (c, dpred, pred, target, n, dloss))                                                                         \
  OP(FLOAT_DOUBLE, void, gaussian_nll_backward,                                                                  \
     (const OpContext& c, T* dlogvar, const T* logvar, const T* pred, const T* target, int64_t n, T dloss),      \
     (c, dlogvar, logvar, pred, target, n, dloss))                                                               \
  OP(FLOAT, void, adam_step,                                                                                     \
     (const OpContext& c, const AdamState& st, float* params, float* exp_avg, float* exp_avg_sq,                 \
      const float* grads, size_t n, const AdamConfig& cfg),                                                      \
     (c, st, params, exp_avg, exp_avg_sq, grads, n, cfg))                                                        \
  OP(FLOAT, void, fill, (const OpContext& c, float* p, float value, size_t n), (c, p, value, n))                 \
  OP(FLOAT, void, axpby, (const OpContext& c, float* y, float a, const float* x, float b, size_t n),             \
     (c, y, a, x, b, n))

#define SL_OPS(OP, T) \
  SL_OPS_LINEAR(OP, T) SL_OPS_MAX(OP, T) SL_OPS_GLOBAL_LINE(OP, T) SL_OPS_WINDOW(OP, T) SL_OPS_LOSS(OP, T)

// ---- what the ops share -----------------------------------------------------------------------
// The compact argmax rows of the encoder backward (compact_argmax_rows fills them).
struct ArgmaxRows {
  int32_t* row_of = nullptr;       // [B*P] work: compact index of a point row, or -1
  int32_t* sample_rows = nullptr;  // [B+1]: sample b's compact rows start at sample_rows[b]
  int64_t* source = nullptr;       // [cap] point row b*P+p of each compact row; -1 = padding
  int32_t* din_row = nullptr;      // [B*G] compact row of (b, channel), -1 when inactive
  int32_t* chan_begin = nullptr;   // [cap] first entry of the row's channel list in `chans`
  int32_t* chan_count = nullptr;   // [cap] its length
  int32_t* chans = nullptr;        // [B*G] (b, channel) indices b*G+o per compact row, o ascending
};
// Capacity the ArgmaxRows arrays need for B samples (every sample has <= min(P, G) rows).
inline int64_t argmax_rows_capacity(int B, int P, int G) { return int64_t(B) * (P < G ? P : G); }

// Loss bookkeeping in backend memory: last = this step's loss (the double sum of squares / n,
// rounded to T), sum += last, count += 1. The double accumulation has a fixed order on each
// backend.
template <class T>
struct LossState {
  double* sum = nullptr;
  int32_t* count = nullptr;
  T* last = nullptr;
};

// Adam's step counter and per-step scalars in backend memory, advanced by the op, so a replayed
// CUDA graph advances them too.
struct AdamState {
  int64_t* step = nullptr;   // t, incremented by every adam_step
  float* scalars = nullptr;  // [2] work: lr / (1 - b1^t), sqrt(1 - b2^t), computed in double
};

// ---- the declarations, from the list ----------------------------------------------------------
#define SL_DECLARE_OP(types, ret, name, params, args) SL_DECLARE_OP_##types(ret, name, params)
#define SL_DECLARE_OP_FLOAT_DOUBLE(ret, name, params) \
  template <class T>                                  \
  ret name params;
#define SL_DECLARE_OP_FLOAT(ret, name, params) ret name params;
SL_OPS(SL_DECLARE_OP, T)

}  // namespace sl
