#include "kernels/adam.h"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>

namespace sl {

void adam_update(float* params, float* exp_avg, float* exp_avg_sq, const float* grads, size_t n,
                 int64_t step, const AdamConfig& cfg) {
  // Scalars in double, as PyTorch computes them in Python floats.
  const double bc1 = 1.0 - std::pow(double(cfg.beta1), double(step));
  const double bc2 = 1.0 - std::pow(double(cfg.beta2), double(step));
  const float step_size = float(double(cfg.lr) / bc1);
  const float bc2_sqrt = float(std::sqrt(bc2));
  const float b1 = cfg.beta1, b2 = cfg.beta2, eps = cfg.eps, wd = cfg.weight_decay;
  constexpr size_t kBlock = 1 << 14;  // element-wise: any split gives identical bytes
  tbb::parallel_for(size_t(0), (n + kBlock - 1) / kBlock, [&](size_t blk) {
    const size_t lo = blk * kBlock, hi = std::min(n, lo + kBlock);
    for (size_t i = lo; i < hi; ++i) {
      float g = grads[i];
      if (wd != 0.f) g += wd * params[i];
      const float m = b1 * exp_avg[i] + (1.f - b1) * g;
      const float v = b2 * exp_avg_sq[i] + (1.f - b2) * g * g;
      exp_avg[i] = m;
      exp_avg_sq[i] = v;
      params[i] -= step_size * (m / (std::sqrt(v) / bc2_sqrt + eps));
    }
  });
}

void adam_update_reference(float* params, float* exp_avg, float* exp_avg_sq, const float* grads,
                           size_t n, int64_t step, const AdamConfig& cfg) {
  for (size_t i = 0; i < n; ++i) {
    double g = grads[i];
    if (cfg.weight_decay != 0.f) g += double(cfg.weight_decay) * params[i];
    const double m = double(cfg.beta1) * exp_avg[i] + (1.0 - double(cfg.beta1)) * g;
    const double v = double(cfg.beta2) * exp_avg_sq[i] + (1.0 - double(cfg.beta2)) * g * g;
    exp_avg[i] = float(m);
    exp_avg_sq[i] = float(v);
    const double mhat = m / (1.0 - std::pow(double(cfg.beta1), double(step)));
    const double vhat = v / (1.0 - std::pow(double(cfg.beta2), double(step)));
    params[i] = float(params[i] - double(cfg.lr) * mhat / (std::sqrt(vhat) + double(cfg.eps)));
  }
}

Adam::Adam(size_t n, AdamConfig cfg) : exp_avg(n, 0.f), exp_avg_sq(n, 0.f), cfg_(cfg) {}

void Adam::step(float* params, const float* grads) {
  ++step_count;
  adam_update(params, exp_avg.data(), exp_avg_sq.data(), grads, exp_avg.size(), step_count, cfg_);
}

}  // namespace sl
