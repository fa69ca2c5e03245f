// Layer ops of the LineRefiner, each a forward/backward pair with one fixed argument order:
//   outputs, values saved for backward, inputs, weights, sizes (llm.c style).
// Activations are row-major [rows, channels] (a Conv1d with kernel 1 over points is a GEMM over
// rows); weights use PyTorch's Conv1d layout [C_out, C_in(, 1)].
// EVERY backward ACCUMULATES (+=) into its gradient outputs; callers zero them first.
// Ops are templated on T (float for training, double for finite-difference tests) and
// device-neutral: raw pointers + sizes. `*_reference` are naive loops the fast ops are tested
// against. Fast ops parallelise over FIXED blocks (rows or channels), never over the thread
// count, so their results are byte-identical for any number of threads.
#pragma once
#include <cstdint>

namespace sl {

// ---- point-wise linear (Conv1d kernel 1) + bias, optional fused ReLU ----------------------
// out [N, C_out] = act(in [N, C_in] · weight [C_out, C_in]^T + bias [C_out])
template <class T>
void linear_forward(T* out, const T* in, const T* weight, const T* bias, int64_t N, int C_in,
                    int C_out, bool relu);
// din [N, C_in] (nullable: not needed for network inputs), dweight [C_out, C_in],
// dbias [C_out]; dout [N, C_out] is OVERWRITTEN with the pre-activation gradient when relu;
// out [N, C_out] is the forward output (saved; used for the ReLU mask).
template <class T>
void linear_backward(T* din, T* dweight, T* dbias, T* dout, const T* out, const T* in,
                     const T* weight, int64_t N, int C_in, int C_out, bool relu);
template <class T>
void linear_forward_reference(T* out, const T* in, const T* weight, const T* bias, int64_t N,
                              int C_in, int C_out, bool relu);
template <class T>
void linear_backward_reference(T* din, T* dweight, T* dbias, const T* dout, const T* out,
                               const T* in, const T* weight, int64_t N, int C_in, int C_out,
                               bool relu);

// ---- max over points with argmax (reference op) -------------------------------------------
// out [B, C] = max_p in [B, P, C]; argmax [B, C] = the first p attaining the max.
template <class T>
void maxpool_forward(T* out, int32_t* argmax, const T* in, int B, int P, int C);
// din [B, P, C] += dout [B, C] scattered to the argmax rows only.
template <class T>
void maxpool_backward(T* din, const T* dout, const int32_t* argmax, int B, int P, int C);

// ---- fused: out = max_p relu(in · W^T + b), the full [B, P, C_out] is never stored --------
// out [B, C_out]; argmax [B, C_out] (first p attaining the max of the pre-activation);
// in [B, P, C_in]; weight [C_out, C_in]; bias [C_out].
template <class T>
void linear_relu_max_forward(T* out, int32_t* argmax, const T* in, const T* weight,
                             const T* bias, int B, int P, int C_in, int C_out);
// Sparse backward: only the argmax row of each (b, channel) with out > 0 receives gradient,
// so this costs O(B · C_out · C_in) instead of a [B·P, C_out] GEMM.
// din: rows of in's gradient; row of (b, o) is din_row[b*C_out+o] when din_row is given
// (a compacted layout), else b*P + argmax[b*C_out+o] (dense [B, P, C_in]). din nullable.
// dweight [C_out, C_in], dbias [C_out], dout [B, C_out], out [B, C_out] (saved),
// argmax [B, C_out] (saved), in [B, P, C_in], weight [C_out, C_in].
template <class T>
void linear_relu_max_backward(T* din, const int32_t* din_row, T* dweight, T* dbias,
                              const T* dout, const T* out, const int32_t* argmax, const T* in,
                              const T* weight, int B, int P, int C_in, int C_out);

// ---- broadcast-concat (reference op) -------------------------------------------------------
// out [B, L, G + F] = [global [B, G] broadcast over L, feat [B, L, F]] (global first).
template <class T>
void concat_forward(T* out, const T* global, const T* feat, int B, int L, int G, int F);
// dglobal [B, G] += sum_l dout[b, l, :G]; dfeat [B, L, F] += dout[b, l, G:].
template <class T>
void concat_backward(T* dglobal, T* dfeat, const T* dout, int B, int L, int G, int F);

// ---- fused: linear over the broadcast-concat without materialising it ----------------------
// out [B, L, C_out] = act([global, feat] · weight [C_out, G+F]^T + bias): the global part is
// projected once per sample (B rows) instead of once per line point (B·L rows).
// scratch [B, C_out] is caller-provided work memory.
template <class T>
void global_line_linear_forward(T* out, const T* global, const T* feat, const T* weight,
                                const T* bias, int B, int L, int G, int F, int C_out, bool relu,
                                T* scratch);
// dglobal [B, G], dfeat [B, L, F], dweight [C_out, G+F], dbias [C_out];
// dout [B, L, C_out] is OVERWRITTEN with the pre-activation gradient when relu.
template <class T>
void global_line_linear_backward(T* dglobal, T* dfeat, T* dweight, T* dbias, T* dout,
                                 const T* out, const T* global, const T* feat, const T* weight,
                                 int B, int L, int G, int F, int C_out, bool relu, T* scratch);

// ---- mean squared error over all n elements -----------------------------------------------
template <class T>
T mse_forward(const T* pred, const T* target, int64_t n);
// dpred [n] += dloss * 2 (pred - target) / n
template <class T>
void mse_backward(T* dpred, const T* pred, const T* target, int64_t n, T dloss = T(1));

}  // namespace sl
