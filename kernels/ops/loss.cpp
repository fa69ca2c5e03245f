// MSE loss with its bookkeeping in backend memory, the variance head's Gaussian likelihood
// gradient, Adam's step, fill, axpby: the CPU bodies (the CUDA ones: loss.cu).
#include <algorithm>
#include <cmath>

#include "kernels/ops/cpu_common.h"
#include "kernels/ops/dispatch.h"

namespace sl::cpu_ops {

template <class T>
void mse_loss(const OpContext& c, const LossState<T>& st, const T* pred, const T* target, int64_t n) {
  double acc = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double d = double(pred[i]) - double(target[i]);
    acc += d * d;
  }
  const T loss = T(acc / double(n));
  *st.last = loss;
  *st.sum += double(loss);
  *st.count += 1;
}

template <class T>
void mse_backward(const OpContext& c, T* dpred, const T* pred, const T* target, int64_t n, T dloss) {
  const T s = dloss * T(2) / T(n);
  for (int64_t i = 0; i < n; ++i) dpred[i] += s * (pred[i] - target[i]);
}

template <class T>
void gaussian_nll_backward(const OpContext& c, T* dlogvar, const T* logvar, const T* pred, const T* target, int64_t n,
                           T dloss) {
  const double s = double(dloss) * 0.5 / double(n);
  for (int64_t i = 0; i < n; ++i) {
    const double r = double(pred[i]) - double(target[i]);
    dlogvar[i] += T(s * (1.0 - r * r * std::exp(-std::max(double(logvar[i]), -20.0))));
  }
}

void adam_step(const OpContext& c, const AdamState& st, float* params, float* exp_avg, float* exp_avg_sq,
               const float* grads, size_t n, const AdamConfig& cfg) {
  const int64_t t = ++*st.step;
  adam_update(params, exp_avg, exp_avg_sq, grads, n, t, cfg);
}

void fill(const OpContext& c, float* p, float value, size_t n) {
  std::fill(p, p + n, value);
}

void axpby(const OpContext& c, float* y, float a, const float* x, float b, size_t n) {
  if (b == 0.f) {
    for (size_t i = 0; i < n; ++i) y[i] = a * x[i];
    return;
  }
  for (size_t i = 0; i < n; ++i) {
    const float ax = a * x[i], by = b * y[i];
    y[i] = ax + by;
  }
}

}  // namespace sl::cpu_ops

namespace sl {
SL_DEFINE_OPS(SL_OPS_LOSS)
}  // namespace sl
