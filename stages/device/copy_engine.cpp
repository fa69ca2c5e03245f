// DeviceRing on the CUDA runtime API (no kernels, so a plain C++ file). Empty without CUDA.
#ifdef SL_WITH_CUDA
#include "stages/device/copy_engine.h"

#include <condition_variable>
#include <mutex>
#include <vector>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/nvtx.h"

namespace sl {

struct DeviceRing::Impl {
  struct Slot {
    float* base = nullptr;
    cudaEvent_t copied = nullptr;  // recorded on the copy stream after the slot's copies
    cudaEvent_t read = nullptr;    // recorded on the consumer's stream by release()
    bool in_use = false;           // submitted, not yet released
    bool ever_read = false;        // `read` has been recorded at least once
    std::shared_ptr<const Batch> held;  // until `copied` completes
  };
  int device = 0, capacity = 0, P = 0, L = 0, cin = 0, cline = 0, cout = 0;
  size_t slot_floats = 0;
  float* mem = nullptr;
  cudaStream_t copy = nullptr;
  std::vector<Slot> ring;
  int next = 0;
  std::mutex mu;
  std::condition_variable released;

  void use_device() const { SL_CUDA_CHECK(cudaSetDevice(device)); }

  // Drops held batches whose copies completed. Caller holds mu.
  size_t poll_locked() {
    size_t held = 0;
    for (Slot& s : ring) {
      if (!s.held) continue;
      const cudaError_t e = cudaEventQuery(s.copied);
      if (e == cudaSuccess) {
        s.held.reset();  // the pinned host slot goes back to its pool
      } else if (e == cudaErrorNotReady) {
        ++held;
      } else {
        SL_CUDA_CHECK(e);
      }
    }
    return held;
  }

  void release_all() {
    cudaSetDevice(device);
    // Consumers' streams are synchronised by their owners before the ring goes (the trainer
    // declares the ring before the model, so the model is destroyed first).
    if (copy) cudaStreamSynchronize(copy);
    for (Slot& s : ring) {
      s.held.reset();
      if (s.copied) cudaEventDestroy(s.copied);
      if (s.read) cudaEventDestroy(s.read);
    }
    ring.clear();
    if (copy) cudaStreamDestroy(copy);
    if (mem) cudaFree(mem);
    copy = nullptr;
    mem = nullptr;
  }
};

DeviceRing::DeviceRing(int slots, int capacity, int P, int L, const ModelConfig& cfg, int device)
    : impl_(std::make_unique<Impl>()) {
  if (slots <= 0 || capacity <= 0 || P <= 0 || L <= 0)
    fail("DeviceRing", "slots, capacity, P and L must be positive");
  Impl& I = *impl_;
  I.device = device, I.capacity = capacity, I.P = P, I.L = L;
  I.cin = cfg.in_channels, I.cline = cfg.line_channels, I.cout = cfg.out_channels;
  I.slot_floats = size_t(capacity) * (size_t(P) * I.cin + size_t(L) * I.cline + size_t(L) * I.cout);
  try {
    I.use_device();
    SL_CUDA_CHECK(cudaMalloc(&I.mem, I.slot_floats * slots * sizeof(float)));
    SL_CUDA_CHECK(cudaStreamCreateWithFlags(&I.copy, cudaStreamNonBlocking));
    I.ring.resize(slots);
    for (int k = 0; k < slots; ++k) {
      Impl::Slot& s = I.ring[k];
      s.base = I.mem + I.slot_floats * k;
      SL_CUDA_CHECK(cudaEventCreateWithFlags(&s.copied, cudaEventDisableTiming));
      SL_CUDA_CHECK(cudaEventCreateWithFlags(&s.read, cudaEventDisableTiming));
    }
  } catch (...) {
    I.release_all();
    throw;
  }
}

DeviceRing::~DeviceRing() {
  if (impl_) impl_->release_all();
}

void* DeviceRing::copy_stream() const { return impl_->copy; }
size_t DeviceRing::device_bytes() const { return impl_->slot_floats * impl_->ring.size() * sizeof(float); }
int DeviceRing::slots() const { return int(impl_->ring.size()); }

DeviceBatch DeviceRing::submit(std::shared_ptr<const Batch> batch) {
  SL_NVTX_RANGE("DeviceRing::submit");
  Impl& I = *impl_;
  if (!batch) fail("DeviceRing::submit", "null batch");
  const Batch& b = *batch;
  const BatchTensor& tc = b.tensor("context");
  const BatchTensor& tn = b.tensor("noisy_line");
  const BatchTensor& tt = b.tensor("target_offset");
  auto expect = [&](const BatchTensor& t, int64_t d1, int64_t d2) {
    if (t.shape.size() != 3 || t.shape[1] != d1 || t.shape[2] != d2)
      fail("DeviceRing::submit", "tensor '" + t.name + "' has a shape other than [B, " +
                                     std::to_string(d1) + ", " + std::to_string(d2) + "]");
  };
  expect(tc, I.P, I.cin);
  expect(tn, I.L, I.cline);
  expect(tt, I.L, I.cout);
  if (b.size <= 0 || b.size > I.capacity)
    fail("DeviceRing::submit", "batch of " + std::to_string(b.size) +
                                   " samples does not fit a ring slot of " +
                                   std::to_string(I.capacity));

  std::unique_lock<std::mutex> lock(I.mu);
  I.use_device();
  const int k = I.next;
  Impl::Slot& s = I.ring[k];
  // Bound on batches in flight: wait (host) until the consumer has released this slot.
  I.released.wait(lock, [&] { return !s.in_use; });
  I.poll_locked();
  if (s.held) {  // its previous copy is still running: the ring is shorter than the copy latency
    SL_CUDA_CHECK(cudaEventSynchronize(s.copied));
    s.held.reset();
  }
  // GPU-side: do not overwrite the slot before the compute that read it has run.
  if (s.ever_read) SL_CUDA_CHECK(cudaStreamWaitEvent(I.copy, s.read, 0));

  DeviceBatch d;
  d.slot = k;
  d.B = int(b.size), d.P = I.P, d.L = I.L;
  d.context = s.base;
  d.noisy_line = d.context + size_t(I.capacity) * I.P * I.cin;
  d.target_offset = d.noisy_line + size_t(I.capacity) * I.L * I.cline;
  d.epoch = b.epoch, d.index = b.index;
  auto h2d = [&](float* dst, const BatchTensor& t) {
    SL_CUDA_CHECK(cudaMemcpyAsync(dst, b.host(t.name), size_t(b.size) * t.per_sample * sizeof(float),
                                  cudaMemcpyHostToDevice, I.copy));
  };
  h2d(d.context, tc);
  h2d(d.noisy_line, tn);
  h2d(d.target_offset, tt);
  SL_CUDA_CHECK(cudaEventRecord(s.copied, I.copy));
  s.held = std::move(batch);
  s.in_use = true;
  I.next = (k + 1) % int(I.ring.size());
  return d;
}

void DeviceRing::wait_copied(const DeviceBatch& d, void* stream) {
  Impl& I = *impl_;
  std::lock_guard<std::mutex> lock(I.mu);
  if (d.slot < 0 || d.slot >= int(I.ring.size()) || !I.ring[d.slot].in_use)
    fail("DeviceRing::wait_copied", "slot " + std::to_string(d.slot) + " is not in use");
  I.use_device();
  SL_CUDA_CHECK(cudaStreamWaitEvent(static_cast<cudaStream_t>(stream), I.ring[d.slot].copied, 0));
}

void DeviceRing::release(const DeviceBatch& d, void* stream) {
  Impl& I = *impl_;
  {
    std::lock_guard<std::mutex> lock(I.mu);
    if (d.slot < 0 || d.slot >= int(I.ring.size()) || !I.ring[d.slot].in_use)
      fail("DeviceRing::release", "slot " + std::to_string(d.slot) + " is not in use");
    I.use_device();
    Impl::Slot& s = I.ring[d.slot];
    SL_CUDA_CHECK(cudaEventRecord(s.read, static_cast<cudaStream_t>(stream)));
    s.ever_read = true;
    s.in_use = false;
    I.poll_locked();  // the consumer's steady beat: return finished host slots to their pool
  }
  I.released.notify_all();
}

size_t DeviceRing::poll() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->use_device();
  return impl_->poll_locked();
}

void DeviceRing::synchronize() {
  Impl& I = *impl_;
  std::lock_guard<std::mutex> lock(I.mu);
  I.use_device();
  SL_CUDA_CHECK(cudaStreamSynchronize(I.copy));
  for (Impl::Slot& s : I.ring) s.held.reset();
}

}  // namespace sl
#endif  // SL_WITH_CUDA
