// Internal to kernels/ops: how an op reaches its CUDA body. The CUDA bodies (float only) are
// declared here for every build and defined in the .cu files only when the build has CUDA;
// SL_CUDA_BODY compiles the call in CUDA builds and a clear error otherwise.
#pragma once
#include <cstdint>
#include <type_traits>

#include "kernels/ops.h"

namespace sl::detail {

// "linear_forward: T = double is not supported on cuda:0 (the CUDA bodies are float only)"
[[noreturn]] void unsupported_type(const OpContext& c, const char* op, const char* type);
[[noreturn]] void no_cuda_build(const char* op);

}  // namespace sl::detail

#ifdef SL_WITH_CUDA
#define SL_CUDA_BODY(op, call) call
#else
#define SL_CUDA_BODY(op, call) ::sl::detail::no_cuda_build(op)
#endif

// In an op templated on T: route a CUDA context to the float body, refuse other types.
#define SL_DISPATCH_CUDA(c, T, op, call)                                      \
  if ((c).on_cuda()) {                                                        \
    if constexpr (std::is_same_v<T, float>) {                                 \
      SL_CUDA_BODY(op, call);                                                 \
      return;                                                                 \
    } else {                                                                  \
      ::sl::detail::unsupported_type(c, op, "double");                        \
    }                                                                         \
  }

namespace sl::cuda_ops {

void linear_forward(const OpContext& c, float* out, const float* in, const float* weight, const float* bias,
                    int64_t N, int C_in, int C_out, bool relu);
void linear_backward(const OpContext& c, float* din, float* dweight, float* dbias, float* dout, const float* out,
                     const float* in, const float* weight, int64_t N, int C_in, int C_out, bool relu);
void linear_relu_max_forward(const OpContext& c, float* out, int32_t* argmax, const float* in, const float* weight,
                             const float* bias, int B, int P, int C_in, int C_out, float* scratch);
void compact_argmax_rows(const OpContext& c, const ArgmaxRows& r, const float* out, const int32_t* argmax, int B,
                         int P, int G);
void gather_rows(const OpContext& c, float* dst, const float* src, const int64_t* source, int64_t U, int C);
void linear_relu_max_backward(const OpContext& c, float* din, const ArgmaxRows& r, float* dweight, float* dbias,
                              const float* dout, const float* out, const int32_t* argmax, const float* in,
                              const float* weight, int B, int P, int C_in, int C_out);
void global_line_linear_forward(const OpContext& c, float* out, const float* global, const float* feat,
                                const float* weight, const float* bias, int B, int L, int G, int F, int C_out,
                                bool relu, float* scratch);
void global_line_linear_backward(const OpContext& c, float* dglobal, float* dfeat, float* dweight, float* dbias,
                                 float* dout, const float* out, const float* global, const float* feat,
                                 const float* weight, int B, int L, int G, int F, int C_out, bool relu,
                                 float* scratch);
void mse_loss(const OpContext& c, const LossState<float>& st, const float* pred, const float* target, int64_t n);
void mse_backward(const OpContext& c, float* dpred, const float* pred, const float* target, int64_t n,
                  float dloss);
void adam_step(const OpContext& c, const AdamState& st, float* params, float* exp_avg, float* exp_avg_sq,
               const float* grads, size_t n, const AdamConfig& cfg);
void fill(const OpContext& c, float* p, float value, size_t n);
void axpby(const OpContext& c, float* y, float a, const float* x, float b, size_t n);

}  // namespace sl::cuda_ops
