#include "stages/train/cuda_trainer.h"

#include <cstdio>

#include "graph/error.h"

#ifdef SL_WITH_CUDA
#include <cuda_runtime_api.h>

#include "kernels/cuda/line_refiner_cuda.h"
#include "kernels/cuda/nvtx.h"
#include "stages/device/copy_engine.h"
#include "stages/device/memory_plan.h"
#include "stages/device/to_device.h"
#endif

namespace sl {

#ifdef SL_WITH_CUDA

bool cuda_trainer_available(std::string*) { return true; }

struct CudaTrainer::Impl {
  std::unique_ptr<CudaLineRefiner> model;
  std::shared_ptr<DeviceRing> ring;  // the to_device stage's ring (its compute stream)
  bool loss_pending = false;
};

static const DeviceBatchHandle& handle_of(const Batch& b) {
  if (!b.device) throw Error("train_step on a GPU needs batches from a to_device stage (none before it?)");
  return *static_cast<const DeviceBatchHandle*>(b.device.get());
}

CudaTrainer::CudaTrainer(const LineRefiner& host, const Adam& adam, const std::string& device,
                         const std::string& precision, const Batch& first, int host_slots, bool quiet)
    : impl_(std::make_unique<Impl>()) {
  const auto& h = handle_of(first);
  impl_->ring = h.ring;
  const int B = (int)first.capacity, P = h.batch->P, L = h.batch->L;
  CudaModelOptions opt;
  opt.device = device.size() > 5 ? std::stoi(device.substr(5)) : 0;
  opt.precision = precision;
  opt.adam = adam.config();
  MemoryPlan plan = plan_memory(host.config(), B, P, L, impl_->ring->slots(), host_slots);
  if (!quiet) std::fprintf(stderr, "GPU memory plan (B=%d, P=%d, L=%d):\n%s", B, P, L, plan.to_text().c_str());
  try {
    impl_->model = std::make_unique<CudaLineRefiner>(host.config(), host.param_data(), opt);
    impl_->model->upload_adam(adam.exp_avg.data(), adam.exp_avg_sq.data(), adam.step_count, impl_->ring->compute_stream());
    impl_->model->prepare(B, P, L);  // all allocations happen here, none in the loop
  } catch (const Error& e) {
    size_t free_b = 0, total_b = 0;
    cudaGetLastError();
    cudaMemGetInfo(&free_b, &total_b);
    const size_t margin = 256ull << 20;
    int fits = largest_batch_that_fits(host.config(), P, L, impl_->ring->slots(), free_b > margin ? free_b - margin : 0);
    throw Error(std::string(e.what()) + "\nGPU memory plan for batch.size " + std::to_string(B) + ":\n" + plan.to_text() +
                "free on " + device + ": " + std::to_string(free_b >> 20) + " MiB of " + std::to_string(total_b >> 20) +
                " MiB; the largest batch.size that fits: " + std::to_string(fits));
  }
}

CudaTrainer::~CudaTrainer() = default;

void CudaTrainer::step(const Batch& b) {
  const auto& h = handle_of(b);
  const DeviceBatch& d = *h.batch;
  void* stream = h.ring->compute_stream();
  SL_NVTX_RANGE("train.step");
  impl_->model->load_inputs(d.context, d.noisy_line, d.target_offset, d.B, d.P, d.L, stream);
  h.ring->release(d);  // the ring slot may be refilled once this copy-out ran on the GPU
  impl_->model->step_graph(d.B, d.P, d.L, stream);
}

void CudaTrainer::request_loss() {
  if (impl_->loss_pending) return;
  impl_->model->request_loss(impl_->ring->compute_stream());
  impl_->loss_pending = true;
}

bool CudaTrainer::poll_loss(float* mean, int* steps) {
  if (!impl_->loss_pending) return false;
  if (!impl_->model->poll_loss(mean, steps)) return false;
  impl_->loss_pending = false;
  return true;
}

float CudaTrainer::read_loss(int* steps) {
  float m1 = 0;
  int n1 = 0;
  if (impl_->loss_pending) {  // the requested copy first, then whatever ran after it
    while (!impl_->model->poll_loss(&m1, &n1)) cudaStreamSynchronize((cudaStream_t)impl_->ring->compute_stream());
    impl_->loss_pending = false;
  }
  int n2 = 0;
  float m2 = impl_->model->read_loss_and_reset(impl_->ring->compute_stream(), &n2);
  if (steps) *steps = n1 + n2;
  if (n2 == 0) return m1;
  if (n1 == 0) return m2;
  return (m1 * (float)n1 + m2 * (float)n2) / (float)(n1 + n2);
}

void CudaTrainer::sync_to_host(LineRefiner& model, Adam& adam) {
  void* s = impl_->ring->compute_stream();
  impl_->model->download_params(model.param_data(), s);
  adam.step_count = impl_->model->download_adam(adam.exp_avg.data(), adam.exp_avg_sq.data(), s);
}

#else  // no CUDA in this build

bool cuda_trainer_available(std::string* why) {
  if (why) *why = "this build has no CUDA backend";
  return false;
}
// The constructor refuses, so no object exists; the members say so too rather than pretend.
struct CudaTrainer::Impl {};
[[noreturn]] static void no_cuda(const std::string& device) {
  throw Error("device " + device + " requested, but this build has no CUDA backend");
}
CudaTrainer::CudaTrainer(const LineRefiner&, const Adam&, const std::string& device, const std::string&, const Batch&, int,
                         bool) {
  no_cuda(device);
}
CudaTrainer::~CudaTrainer() = default;
void CudaTrainer::step(const Batch&) { no_cuda("cuda"); }
void CudaTrainer::request_loss() { no_cuda("cuda"); }
bool CudaTrainer::poll_loss(float*, int*) { no_cuda("cuda"); }
float CudaTrainer::read_loss(int*) { no_cuda("cuda"); }
void CudaTrainer::sync_to_host(LineRefiner&, Adam&) { no_cuda("cuda"); }

#endif

}  // namespace sl
