// Adam with PyTorch's semantics (torch.optim.Adam, amsgrad=False, maximize=False):
//   step += 1; g += weight_decay * p; m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
//   p -= lr / (1 - b1^step) * m / (sqrt(v) / sqrt(1 - b2^step) + eps)
// One flat pass over the parameter buffer (parameters, gradients and both moments share the
// layout of the model's parameter table).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace sl {

struct AdamConfig {
  float lr = 1e-3f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f, weight_decay = 0.f;
};

// One update of n elements at step number `step` (1-based, already incremented).
// params [n], exp_avg [n], exp_avg_sq [n] are updated in place; grads [n] is read.
void adam_update(float* params, float* exp_avg, float* exp_avg_sq, const float* grads, size_t n,
                 int64_t step, const AdamConfig& cfg);
// Naive double-precision version of the same formula, for tests.
void adam_update_reference(float* params, float* exp_avg, float* exp_avg_sq, const float* grads,
                           size_t n, int64_t step, const AdamConfig& cfg);

class Adam {
 public:
  Adam(size_t n, AdamConfig cfg = {});
  // params [n] updated in place from grads [n]; increments step_count first.
  void step(float* params, const float* grads);
  size_t size() const { return exp_avg.size(); }
  const AdamConfig& config() const { return cfg_; }

  std::vector<float> exp_avg, exp_avg_sq;
  int64_t step_count = 0;

 private:
  AdamConfig cfg_;
};

}  // namespace sl
