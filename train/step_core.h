// The step core of train_step: the model and Adam on the run's backend, and the ONE path every
// batch takes through them. The batch's inputs are read once -- from its device ring slot (a
// GPU's, or the host ring of the tests) or from its host slot on the CPU backend -- then either
// one whole step runs (forward, loss, backward, Adam: on a GPU the captured CUDA graph), or, when
// steps are synced (several ranks, or train.accumulate > 1), the batch is one micro-batch of the
// step's window and the step comes with the window's exchange (grad_sync.h).
#pragma once
#include <cstdint>
#include <memory>

#include "graph/comm.h"
#include "graph/trace.h"
#include "kernels/adam.h"
#include "kernels/backend.h"
#include "kernels/model.h"
#include "graph/batch.h"
#include "train/grad_sync.h"

namespace sl {

class DeviceRing;

class StepCore {
 public:
  // The model's weights from `seed` (PyTorch's default init), Adam's moments at zero.
  StepCore(const ModelConfig& cfg, const AdamConfig& adam, const Backend& backend, Precision precision,
           uint64_t seed);
  ~StepCore();

  // Steps exchange gradients with the other ranks and/or accumulate micro-batches.
  void sync_steps(Comm& comm, int accumulate);
  bool synced() const { return sync_ != nullptr; }

  // Before the first batch: the workspace for the batch capacity (short last batches run inside
  // it). On a GPU the memory plan is printed (unless quiet); on out-of-memory the model is freed
  // and the error gives the plan, the memory free without the model and the largest batch size
  // that fits. Throws sl::Error.
  bool prepared() const { return model_ && model_->capacity() > 0; }
  void prepare(const Batch& first, bool quiet);

  // One batch. Unsynced: one whole step (returns true). Synced: a micro-batch added to the step's
  // window (returns false); the step is taken by exchange().
  bool train(const Batch& b, Trace* trace);
  // Synced steps: the window's collective round (grad_sync.h); Adam's step when it brought
  // samples and no rank asked to stop. contribute = false drops this rank's window.
  GradSync::Outcome exchange(bool contribute, bool stop);
  int window() const { return sync_ ? sync_->pending() : 0; }  // micro-batches in the window
  bool window_full() const { return sync_ && sync_->full(); }

  // Unsynced steps' loss (synced ones get theirs with the exchange). After each step: asked for
  // -- every step on the CPU, where it is free; on a GPU at log steps, one read at a time, taken
  // when the asynchronous copy has landed. Before a host read (a checkpoint): asked for if none is
  // in flight, so the steps since the last read are checked.
  void request_loss(int64_t step, bool log_step);
  void request_loss_now(int64_t step);
  struct LossRead {
    int64_t step = 0;  // the last step it covers
    float last = 0;    // that step's loss
    double mean = 0;   // the mean since the previous read
    bool one_step = false;  // the CPU: every step's own
  };
  // A read that has landed (wait: blocks for the one in flight); false when there is none.
  bool take_loss(LossRead* r, bool wait);

  // The weights for a host reader (evaluation): on a GPU a host copy, refreshed by this call
  // (waits for the model's stream); on the CPU the model itself.
  const LineRefiner& weights_on_host();
  const LineRefiner* host_model() const { return host_model_ ? host_model_.get() : model_.get(); }

  // Null after an out-of-memory in prepare().
  LineRefiner* model() { return model_.get(); }
  Adam* adam() { return adam_.get(); }
  const Backend& backend() const { return backend_; }
  // Gradient exchange figures (synced steps; 0 otherwise).
  double allreduce_seconds() const { return sync_ ? sync_->control_seconds() : 0; }
  double gradient_seconds() const { return sync_ ? sync_->gradient_seconds() : 0; }
  int64_t exchanges() const { return sync_ ? sync_->exchanges() : 0; }

 private:
  struct Inputs {
    const float *context, *noisy_line, *target_offset;
    const float* local;  // [B, L, K, 4] for line_refiner_local; null for the seeds' model
    int B;
    bool fixed;  // in the model's fixed inputs (loaded from a ring slot)
  };
  Inputs read(const Batch& b);
  const float* local_of(const Batch& b) const;

  ModelConfig cfg_;
  Backend backend_;
  // Declared before the model: the ring (owned with the to_device stage) outlives the model,
  // whose destructor waits for its stream -- the last reader of the ring's slots.
  std::shared_ptr<DeviceRing> ring_;
  std::unique_ptr<LineRefiner> model_;
  std::unique_ptr<Adam> adam_;
  std::unique_ptr<LineRefiner> host_model_;  // GPU runs: the host copy evaluation reads
  std::unique_ptr<GradSync> sync_;
  int64_t requested_step_ = 0;
};

}  // namespace sl
