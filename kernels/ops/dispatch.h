// Internal to kernels/ops: how an op reaches its body, from the op list of kernels/ops.h.
// The CUDA bodies (float only, namespace sl::cuda_ops) are declared here for every build and
// defined in the .cu files only when the build has CUDA. Each kernels/ops/<group>.cpp defines
// its CPU bodies (namespace sl::cpu_ops) and ends with SL_DEFINE_OPS(SL_OPS_<GROUP>): the
// public ops of the group, which send a CUDA context to the CUDA body (refusing T = double,
// and refusing any CUDA context in a build without CUDA) and everything else to the CPU body,
// instantiated for float and double.
#pragma once
#include <cstdint>
#include <type_traits>

#include "kernels/ops.h"

namespace sl::detail {

// "linear_forward: T = double is not supported on cuda:0 (the CUDA bodies are float only)"
[[noreturn]] void unsupported_type(const OpContext& c, const char* op, const char* type);
[[noreturn]] void no_cuda_build(const char* op);

}  // namespace sl::detail

namespace sl::cuda_ops {

#define SL_DECLARE_CUDA_OP(types, ret, name, params, args) ret name params;
SL_OPS(SL_DECLARE_CUDA_OP, float)
#undef SL_DECLARE_CUDA_OP

}  // namespace sl::cuda_ops

#ifdef SL_WITH_CUDA
#define SL_CUDA_RETURN(op, call) return call
#else
#define SL_CUDA_RETURN(op, call) ::sl::detail::no_cuda_build(op)
#endif

#define SL_DEFINE_OP(types, ret, name, params, args) SL_DEFINE_OP_##types(ret, name, params, args)
#define SL_DEFINE_OP_FLOAT_DOUBLE(ret, name, params, args)  \
  template <class T>                                        \
  ret name params {                                         \
    if (c.on_cuda()) {                                      \
      if constexpr (std::is_same_v<T, float>) {             \
        SL_CUDA_RETURN(#name, cuda_ops::name args);         \
      } else {                                              \
        ::sl::detail::unsupported_type(c, #name, "double"); \
      }                                                     \
    }                                                       \
    return cpu_ops::name args;                              \
  }
#define SL_DEFINE_OP_FLOAT(ret, name, params, args)                   \
  ret name params {                                                   \
    if (c.on_cuda()) SL_CUDA_RETURN(#name, cuda_ops::name args);      \
    return cpu_ops::name args;                                        \
  }

#define SL_INSTANTIATE_OP(types, ret, name, params, args) SL_INSTANTIATE_OP_##types(ret, name, params)
#define SL_INSTANTIATE_OP_FLOAT_DOUBLE(ret, name, params) template ret name params;
#define SL_INSTANTIATE_OP_FLOAT(ret, name, params)

// At the end of kernels/ops/<group>.cpp, in namespace sl, after the group's CPU bodies.
#define SL_DEFINE_OPS(group) \
  group(SL_DEFINE_OP, T) group(SL_INSTANTIATE_OP, float) group(SL_INSTANTIATE_OP, double)
