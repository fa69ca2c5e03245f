// One optimizer step of a data-parallel run and/or of gradient accumulation (train.accumulate):
// up to K micro-batches on each rank, their gradients summed weighted by their sample counts,
// then summed across the ranks, so the step's gradient is the mean over every sample of the
// global batch -- the gradient a one-process batch of those samples gives, whatever their
// split (short last batches included). The protocol:
//
//   every step, every rank calls exchange() once, in the same order:
//     1. a sum of [samples, samples * loss, stop requests] (doubles; tiny)
//     2. when samples > 0 and nobody asked to stop: the gradient sum (the same bits on every
//        rank: Comm::sum_identical on the host, NCCL's ring on GPUs)
//   a rank without data (its epoch share ended first) contributes 0 samples and still applies
//   the step, so the weights never differ; an epoch ends when a round brings 0 samples.
#pragma once
#include <cstdint>
#include <memory>

#include "graph/comm.h"
#include "kernels/backend.h"
#include "kernels/model.h"

namespace sl {

class GradSync {
 public:
  // model: prepared or not; the accumulator is allocated on the model's backend.
  GradSync(Comm& comm, LineRefiner& model, int accumulate);
  ~GradSync();
  GradSync(const GradSync&) = delete;
  GradSync& operator=(const GradSync&) = delete;

  // After a micro-batch's forward_backward of n samples (its batch-mean gradient in the
  // model's gradient buffer, its loss `loss`): adds n * gradient to the accumulator.
  void add(int n, double loss);
  int pending() const { return pending_; }  // micro-batches added since the last exchange
  bool full() const { return pending_ >= accumulate_; }
  int accumulate() const { return accumulate_; }

  struct Outcome {
    int64_t samples = 0;  // in the global step (0: every rank is out of data)
    double loss = 0;      // their mean loss
    bool stop = false;    // a rank asked to stop: the step is NOT taken by anyone
  };
  // The collective (see above). contribute = false: this rank's accumulated micro-batches are
  // dropped (an interrupted window, retrained after a resume). Afterwards the accumulator is
  // empty. When samples > 0 and !stop, the model's gradient buffer holds the step's gradient.
  Outcome exchange(bool contribute, bool stop);

  double control_seconds() const { return control_s_; }  // step 1, which absorbs waiting for slower ranks
  double gradient_seconds() const { return gradient_s_; }  // step 2
  int64_t exchanges() const { return exchanges_; }

 private:
  Comm& comm_;
  LineRefiner& model_;
  int accumulate_;
  Buffer acc_;
  int pending_ = 0;
  int64_t samples_ = 0;
  double loss_sum_ = 0;
  double control_s_ = 0, gradient_s_ = 0;
  int64_t exchanges_ = 0;
  void* nccl_ = nullptr;           // GPU runs built with NCCL
  std::vector<float> host_;        // GPU runs without NCCL: the gradient goes through the host
};

}  // namespace sl
