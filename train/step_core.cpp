#include "train/step_core.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "graph/error.h"
#include "kernels/cuda/runtime.h"
#include "device/copy_engine.h"
#include "device/memory_plan.h"
#include "device/copy_engine.h"

namespace sl {

StepCore::StepCore(const ModelConfig& cfg, const AdamConfig& adam, const Backend& backend, Precision precision,
                   uint64_t seed)
    : cfg_(cfg), backend_(backend) {
  model_ = std::make_unique<LineRefiner>(cfg, seed, backend, precision);
  adam_ = std::make_unique<Adam>(model_->num_params(), adam, backend);
  if (backend.is_cuda()) host_model_ = std::make_unique<LineRefiner>(cfg, 0);
}

StepCore::~StepCore() = default;

void StepCore::sync_steps(Comm& comm, int accumulate) { sync_ = std::make_unique<GradSync>(comm, *model_, accumulate); }

void StepCore::prepare(const Batch& first, bool quiet) {
  const int B = (int)first.capacity, P = (int)first.tensor("context").shape[1],
            L = (int)first.tensor("noisy_line").shape[1];
  const auto& line_shape = first.tensor("noisy_line").shape;
  if (line_shape.size() != 3 || line_shape[2] != cfg_.line_channels)
    throw Error("train_step: the batches' noisy_line has " +
                (line_shape.size() == 3 ? std::to_string(line_shape[2]) : std::string("?")) +
                " channels per line point and model.line_channels is " + std::to_string(cfg_.line_channels) +
                " (3: x y z; with a category_input stage of C categories, 3 + C)");
  if (!backend_.is_cuda()) {
    // model.recompute "auto" on the CPU: off (host memory is not what limits a CPU run's batch).
    if (cfg_.recompute == Recompute::automatic) model_->set_recompute(false);
    model_->prepare(B, P, L);
    return;
  }
#ifndef SL_WITH_CUDA
  (void)quiet;
  throw Error("train_step on " + backend_.name() + ": this build has no CUDA backend");
#else
  if (!first.device) throw Error("train_step on a GPU needs batches from a to_device stage (none before it?)");
  ring_ = first.device->ring;
  // model.recompute "auto": on when the plan without it does not fit what is free (the ring is
  // already allocated and counted by the plan), off otherwise.
  std::string why;
  if (cfg_.recompute == Recompute::automatic) {
    ModelConfig off = cfg_;
    off.recompute = Recompute::off;
    size_t free_b = 0, total_b = 0;
    cuda::mem_info(backend_.device, &free_b, &total_b);
    free_b += ring_->device_bytes();
    const size_t need = plan_memory(off, B, P, L, ring_->slots(), 0).total_device() + kPlanMarginBytes;
    const bool on = need > free_b;
    model_->set_recompute(on);
    cfg_.recompute = on ? Recompute::on : Recompute::off;
    why = std::string(" (auto: ") + std::to_string(need >> 20) + " MiB needed without it, " +
          std::to_string(free_b >> 20) + " MiB free)";
  }
  MemoryPlan plan = plan_memory(cfg_, B, P, L, ring_->slots(), 0);
  if (!quiet)
    std::fprintf(stderr, "GPU memory plan (B=%d, P=%d, L=%d, recompute %s%s):\n%s", B, P, L,
                 recompute_name(cfg_.recompute), why.c_str(), plan.to_text().c_str());
  try {
    model_->prepare(B, P, L);
  } catch (const Error& e) {
    model_.reset();  // measure what is free without this model's own buffers
    adam_.reset();
    size_t free_b = 0, total_b = 0;
    cuda::mem_info(backend_.device, &free_b, &total_b);
    free_b += ring_->device_bytes();  // the plan counts the ring too
    const size_t margin = kPlanMarginBytes;
    const int fits = largest_batch_that_fits(cfg_, P, L, ring_->slots(), free_b > margin ? free_b - margin : 0);
    ModelConfig rc = cfg_;
    rc.recompute = Recompute::on;
    const int fits_rc = largest_batch_that_fits(rc, P, L, ring_->slots(), free_b > margin ? free_b - margin : 0);
    throw Error(std::string(e.what()) + "\nGPU memory plan for batch.size " + std::to_string(B) + ":\n" +
                plan.to_text() + "free on " + backend_.name() + " without this model: " +
                std::to_string(free_b >> 20) + " MiB of " + std::to_string(total_b >> 20) +
                " MiB; the largest batch.size that fits: " + std::to_string(fits) +
                (cfg_.recomputes() ? std::string(" (model.recompute on)")
                                   : " (" + std::to_string(fits_rc) + " with model.recompute on)"));
  }
#endif
}

StepCore::Inputs StepCore::read(const Batch& b) {
  if (b.device) {
    // A batch in a ring slot: copied into the model's fixed inputs on the model's own stream and
    // this thread (nothing is enqueued on a stream another thread could be capturing; the wait
    // is a live dependency, not part of the graph); the slot may be refilled once that copy ran.
    DeviceBatchHandle& h = *b.device;
    const DeviceBatch& d = *h.batch;
    void* st = model_->context().stream;
    if (cfg_.has_local() && d.K != cfg_.local_k)
      throw Error("train_step: model.type line_refiner_local reads `local` [B, L, K=" + std::to_string(cfg_.local_k) +
                  ", 4]; the batches carry " +
                  (d.K > 0 ? "K=" + std::to_string(d.K) + " (model.local.k must be the grouping stage's K)"
                           : std::string("none")));
    h.wait_copied(st);
    model_->load_inputs(d.context, d.noisy_line, d.target_offset, d.B, d.local);
    h.release(st);
    return {model_->input_context(), model_->input_noisy(), model_->input_target(),
            cfg_.has_local() ? model_->input_local() : nullptr, d.B, true};
  }
  if (backend_.is_cuda()) throw Error("train_step on a GPU needs batches from a to_device stage (none before it?)");
  return {b.host("context"), b.host("noisy_line"), b.host("target_offset"), cfg_.has_local() ? local_of(b) : nullptr,
          (int)b.size, false};
}

// The batch's `local` [B, L, K, 4] for the local branch, checked against the model's K.
const float* StepCore::local_of(const Batch& b) const {
  if (std::none_of(b.tensors.begin(), b.tensors.end(), [](const BatchTensor& t) { return t.name == "local"; }))
    throw Error("train_step: model.type line_refiner_local reads the batch's `local` tensor (the points grouped "
                "around each line point, [B, L, K, 4]); this pipeline's batches have none");
  const BatchTensor& t = b.tensor("local");
  const int L = (int)b.tensor("noisy_line").shape[1];
  if (t.shape.size() != 4 || t.shape[1] != L || t.shape[2] != cfg_.local_k || t.shape[3] != cfg_.in_channels)
    throw Error("train_step: the batch's `local` tensor is not [B, L=" + std::to_string(L) +
                ", K=" + std::to_string(cfg_.local_k) + ", " + std::to_string(cfg_.in_channels) +
                "] (model.local.k must be the grouping stage's K)");
  return b.host("local");
}

bool StepCore::train(const Batch& b, Trace* trace) {
  TraceScope ts(trace, sync_ ? "train.forward_backward" : b.device ? "train.step.enqueue" : "train.step", "compute");
  const int P = (int)b.tensor("context").shape[1], L = (int)b.tensor("noisy_line").shape[1];
  const Inputs in = read(b);
  if (sync_) {
    sync_->add(in.B, model_->forward_backward(in.context, in.noisy_line, in.target_offset, in.B, P, L, in.local));
    return false;
  }
  if (in.fixed)
    model_->step_inputs(in.B, *adam_);
  else
    model_->step(in.context, in.noisy_line, in.target_offset, in.B, P, L, *adam_, in.local);
  return true;
}

GradSync::Outcome StepCore::exchange(bool contribute, bool stop) {
  const GradSync::Outcome o = sync_->exchange(contribute, stop);
  if (!o.stop && o.samples > 0) adam_->step(model_->context(), model_->param_data(), model_->grad_data());
  return o;
}

void StepCore::request_loss(int64_t step, bool log_step) {
  if (!backend_.is_cuda()) {
    model_->request_loss();
  } else if (log_step && !model_->loss_pending()) {
    model_->request_loss();
    requested_step_ = step;
  }
}

void StepCore::request_loss_now(int64_t step) {
  if (!model_ || model_->capacity() == 0 || model_->loss_pending()) return;
  model_->request_loss();
  requested_step_ = step;
}

bool StepCore::take_loss(LossRead* r, bool wait) {
  if (!model_ || !model_->loss_pending()) return false;
  float mean = NAN, last = NAN;
  int n = 0;
  if (!model_->poll_loss(&mean, &last, &n, wait) || n == 0) return false;
  *r = {requested_step_, last, mean, !backend_.is_cuda()};
  return true;
}

const LineRefiner& StepCore::weights_on_host() {
  if (!host_model_ || !model_ || model_->capacity() == 0) return *host_model();
  std::vector<float> w(model_->num_params());
  model_->download_params(w.data());
  host_model_->upload_params(w.data());
  return *host_model_;
}

}  // namespace sl
