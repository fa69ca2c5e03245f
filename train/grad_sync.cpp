#include "train/grad_sync.h"

#include <chrono>

#include "graph/error.h"
#include "kernels/cuda/nccl.h"
#include "kernels/ops.h"

namespace sl {
namespace {
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

GradSync::GradSync(Comm& comm, LineRefiner& model, int accumulate)
    : comm_(comm), model_(model), accumulate_(accumulate),
      acc_(model.backend(), model.num_params() * sizeof(float), "the gradient accumulator") {
  if (accumulate < 1) throw Error("accumulate must be >= 1, not " + std::to_string(accumulate));
  if (model.backend().is_cuda() && comm.size() > 1 && nccl::available()) nccl_ = nccl::create(comm, model.backend().device);
}

GradSync::~GradSync() { nccl::destroy(nccl_); }

void GradSync::add(int n, double loss) {
  const OpContext& c = model_.context();
  axpby(c, acc_.as<float>(), (float)n, model_.grad_data(), pending_ == 0 ? 0.f : 1.f, model_.num_params());
  ++pending_;
  samples_ += n;
  loss_sum_ += (double)n * loss;
}

GradSync::Outcome GradSync::exchange(bool contribute, bool stop) {
  auto t0 = std::chrono::steady_clock::now();
  const bool mine = contribute && pending_ > 0;
  double ctl[3] = {mine ? (double)samples_ : 0.0, mine ? loss_sum_ : 0.0, stop ? 1.0 : 0.0};
  comm_.sum(ctl, 3);
  control_s_ += seconds_since(t0);
  ++exchanges_;
  Outcome o;
  o.samples = (int64_t)ctl[0];
  o.loss = o.samples > 0 ? ctl[1] / ctl[0] : 0.0;
  o.stop = ctl[2] > 0;
  const size_t n = model_.num_params();
  const OpContext& c = model_.context();
  if (o.samples > 0 && !o.stop) {
    t0 = std::chrono::steady_clock::now();
    float* acc = acc_.as<float>();
    if (!mine) zero_async(c, acc, n * sizeof(float));  // a rank without data adds nothing
    if (comm_.size() > 1) {
      if (!model_.backend().is_cuda()) {
        comm_.sum_identical(acc, n);
      } else if (nccl_) {
        nccl::sum(nccl_, acc, n, c.stream);
      } else {  // a GPU build without NCCL: through the host (correct, slower)
        host_.resize(n);
        copy_to_host(c, host_.data(), acc, n * sizeof(float));
        comm_.sum_identical(host_.data(), n);
        copy_from_host(c, acc, host_.data(), n * sizeof(float));
      }
    }
    axpby(c, model_.grad_data(), (float)(1.0 / (double)o.samples), acc, 0.f, n);
    gradient_s_ += seconds_since(t0);
  }
  pending_ = 0;
  samples_ = 0;
  loss_sum_ = 0;
  return o;
}

}  // namespace sl
