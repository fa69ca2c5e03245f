#include "kernels/adam.h"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>

#include "graph/error.h"
#include "kernels/ops.h"

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

namespace {
constexpr size_t kStateBytes = 16;  // int64 t, float scalars[2]
}

Adam::Adam(size_t n, AdamConfig cfg, Backend backend)
    : n_(n),
      cfg_(cfg),
      m_(backend, n * sizeof(float), "Adam exp_avg"),
      v_(backend, n * sizeof(float), "Adam exp_avg_sq"),
      state_(backend, kStateBytes, "Adam step state") {}
Adam::~Adam() = default;
Adam::Adam(Adam&&) noexcept = default;
Adam& Adam::operator=(Adam&&) noexcept = default;

void Adam::step(const OpContext& c, float* params, const float* grads) {
  if (!(c.backend == backend())) fail("Adam", "state on " + backend().name() + ", step on " + c.backend.name());
  const AdamState st{state_.as<int64_t>(), reinterpret_cast<float*>(state_.as<char>() + 8)};
  adam_step(c, st, params, m_.as<float>(), v_.as<float>(), grads, n_, cfg_);
}

std::vector<float> Adam::exp_avg(const OpContext& c) const {
  std::vector<float> h(n_);
  copy_to_host(c, h.data(), m_.data(), n_ * sizeof(float));
  return h;
}

std::vector<float> Adam::exp_avg_sq(const OpContext& c) const {
  std::vector<float> h(n_);
  copy_to_host(c, h.data(), v_.data(), n_ * sizeof(float));
  return h;
}

int64_t Adam::step_count(const OpContext& c) const {
  int64_t t = 0;
  copy_to_host(c, &t, state_.data(), sizeof t);
  return t;
}

void Adam::load(const OpContext& c, const float* m, const float* v, int64_t step) {
  copy_from_host(c, m_.data(), m, n_ * sizeof(float));
  copy_from_host(c, v_.data(), v, n_ * sizeof(float));
  copy_from_host(c, state_.data(), &step, sizeof step);
}

}  // namespace sl
