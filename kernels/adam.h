// Adam with PyTorch's semantics (torch.optim.Adam, amsgrad=False, maximize=False):
//   step += 1; g += weight_decay * p; m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
//   p -= lr / (1 - b1^step) * m / (sqrt(v) / sqrt(1 - b2^step) + eps)
// One flat pass over the parameter buffer (parameters, gradients and both moments share the
// layout of the model's parameter table). The state lives on the model's backend; the update
// itself is the adam_step op (kernels/ops.h), the same on both backends.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/backend.h"

namespace sl {

struct AdamConfig {
  float lr = 1e-3f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f, weight_decay = 0.f;
};

// The CPU update of n elements at step number `step` (1-based, already incremented).
// params [n], exp_avg [n], exp_avg_sq [n] are updated in place; grads [n] is read.
void adam_update(float* params, float* exp_avg, float* exp_avg_sq, const float* grads, size_t n,
                 int64_t step, const AdamConfig& cfg);

struct AdamState;

class Adam {
 public:
  // Moments zero, t = 0, in `backend` memory.
  explicit Adam(size_t n, AdamConfig cfg = {}, Backend backend = Backend::cpu());
  ~Adam();
  Adam(Adam&&) noexcept;
  Adam& operator=(Adam&&) noexcept;

  // One update (t += 1): enqueued on c's stream (the CPU: done on return). params and grads
  // [n] live on the same backend.
  void step(const OpContext& c, float* params, const float* grads);
  void step(float* params, const float* grads) { step(OpContext::cpu(), params, grads); }

  // Host copies of the state; on CUDA these wait for c's stream (pass the model's context).
  std::vector<float> exp_avg(const OpContext& c = OpContext::cpu()) const;
  std::vector<float> exp_avg_sq(const OpContext& c = OpContext::cpu()) const;
  int64_t step_count(const OpContext& c = OpContext::cpu()) const;
  // Replaces the state (a resumed checkpoint); waits like the getters.
  void load(const OpContext& c, const float* exp_avg, const float* exp_avg_sq, int64_t step);
  void load(const float* m, const float* v, int64_t step) { load(OpContext::cpu(), m, v, step); }

  size_t size() const { return n_; }
  const AdamConfig& config() const { return cfg_; }
  // The learning rate of the following steps (a schedule sets it per epoch; the moments stay).
  void set_lr(float lr) { cfg_.lr = lr; }
  const Backend& backend() const { return m_.backend(); }

 private:
  size_t n_ = 0;
  AdamConfig cfg_;
  Buffer m_, v_, state_;  // state_: int64 t, then float scalars[2]
};

}  // namespace sl
