// Plain references: naive loops, no blocking, no BLAS, no backend. The ops of kernels/ops.h
// (both backends) and the model are tested against these; they are never used for training.
#pragma once
#include <cstddef>
#include <cstdint>

#include "kernels/adam.h"
#include "kernels/model.h"

namespace sl {

// out [N, C_out] = act(in [N, C_in] · weight^T + bias)
template <class T>
void linear_forward_reference(T* out, const T* in, const T* weight, const T* bias, int64_t N, int C_in, int C_out,
                              bool relu);
// din (nullable), dweight, dbias ACCUMULATE; dout is read only (the ReLU mask from `out`).
template <class T>
void linear_backward_reference(T* din, T* dweight, T* dbias, const T* dout, const T* out, const T* in,
                               const T* weight, int64_t N, int C_in, int C_out, bool relu);
// out [B, C] = max_p in [B, P, C]; argmax [B, C] = the first p attaining the max.
template <class T>
void maxpool_forward(T* out, int32_t* argmax, const T* in, int B, int P, int C);
// din [B, P, C] += dout [B, C] scattered to the argmax rows only.
template <class T>
void maxpool_backward(T* din, const T* dout, const int32_t* argmax, int B, int P, int C);
// The backward of out [B, C_out] = max_p relu(in [B, P, C_in] · weight^T + bias) given its
// saved out and argmax [B, C_out]: each active (b, o) (out > 0) sends dout [B, C_out] through
// its argmax row alone. din [B, P, C_in] (dense, nullable), dweight, dbias ACCUMULATE.
template <class T>
void linear_relu_max_backward_reference(T* din, T* dweight, T* dbias, const T* dout, const T* out,
                                        const int32_t* argmax, const T* in, const T* weight, int B, int P, int C_in,
                                        int C_out);
// out [B, L, G + F] = [global [B, G] broadcast over L, feat [B, L, F]] (global first).
template <class T>
void concat_forward(T* out, const T* global, const T* feat, int B, int L, int G, int F);
// dglobal [B, G] += sum_l dout[b, l, :G]; dfeat [B, L, F] += dout[b, l, G:].
template <class T>
void concat_backward(T* dglobal, T* dfeat, const T* dout, int B, int L, int G, int F);
// out [B*L, F + (2W+1)*C] = [feat [B*L, F], local [B*L, C] at l-W .. l+W (zeros beyond the ends)].
template <class T>
void line_window_forward_reference(T* out, const T* feat, const T* local, int B, int L, int F, int C, int W);
// dfeat [B*L, F] (nullable) and dlocal [B*L, C] ACCUMULATE the slots of dout that hold them.
template <class T>
void line_window_backward_reference(T* dfeat, T* dlocal, const T* dout, int B, int L, int F, int C, int W);
// mean of (pred - target)^2, accumulated in double
template <class T>
T mse_forward_reference(const T* pred, const T* target, int64_t n);
// dpred [n] += 2 (pred - target) / n
template <class T>
void mse_backward_reference(T* dpred, const T* pred, const T* target, int64_t n);
// The mean over n of the Gaussian negative log likelihood 0.5 (s + r^2 / e^s), s = log_var,
// r = pred - target (constant terms dropped), in double.
template <class T>
T gaussian_nll_reference(const T* log_var, const T* pred, const T* target, int64_t n);
// dlog_var [n] += its gradient with respect to log_var (r held fixed); e^s with s clamped at -20
// as the ops do (kernels/ops.h, gaussian_nll_backward).
template <class T>
void gaussian_nll_backward_reference(T* dlog_var, const T* log_var, const T* pred, const T* target, int64_t n);
// Adam in double, the textbook formula (m_hat, v_hat), at step number `step` (1-based).
void adam_update_reference(float* params, float* exp_avg, float* exp_avg_sq, const float* grads, size_t n,
                           int64_t step, const AdamConfig& cfg);

// The whole model from the references above (materialised concat, dense backward, allocates).
// params laid out by make_param_table(cfg); grads (nullable) is ACCUMULATED into;
// pred (nullable) [B,L,out]. local [B,L,K,in] (K = cfg.local_k): required when cfg.local is
// not empty, ignored otherwise. With a variance head (cfg.variance not empty) log_var (nullable)
// [B,L,out] receives its output, and grads its likelihood gradient. Returns the MSE loss.
// T = float or double.
template <class T>
T line_refiner_reference(const ModelConfig& cfg, const T* params, T* grads, const T* context, const T* noisy_line,
                         const T* target_offset, int B, int P, int L, T* pred, const T* local = nullptr,
                         T* log_var = nullptr);

}  // namespace sl
