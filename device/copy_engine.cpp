// DeviceRing's slot accounting (backend-neutral) and the host transport.
#include "device/copy_engine.h"

#include <condition_variable>
#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <mutex>
#include <vector>

#include "graph/error.h"

namespace sl {

namespace {

// The host transport: slots in ordinary memory, copies by memcpy. Deferred completion keeps
// every copy "in flight" until complete_copies(), so the rule "the ring holds a host batch
// until its copy has landed" is observable in a test.
class HostTransport : public RingTransport {
 public:
  HostTransport(size_t floats, int slots, HostCompletion completion)
      : bytes_(floats * sizeof(float)), done_(size_t(slots), true), deferred_(completion == HostCompletion::Deferred) {
    mem_ = static_cast<float*>(std::aligned_alloc(64, (bytes_ + 63) / 64 * 64));
    if (!mem_) throw Error("DeviceRing: cannot allocate " + std::to_string(bytes_) + " bytes of host ring");
  }
  ~HostTransport() override { std::free(mem_); }
  float* memory() override { return mem_; }
  size_t bytes() const override { return bytes_; }
  void* copy_stream() override { return nullptr; }
  void wait_read(int) override {}  // reads on the host are over when release() is called
  void copy(float* dst, const float* src, size_t bytes) override { std::memcpy(dst, src, bytes); }
  void mark_copied(int slot) override { done_[size_t(slot)] = !deferred_; }
  bool copied(int slot) override { return done_[size_t(slot)]; }
  void wait_copied_host(int slot) override { done_[size_t(slot)] = true; }
  void consumer_wait(int, void*) override {}
  void mark_read(int, void*) override {}
  void synchronize() override { complete_all(); }
  void complete_all() { std::fill(done_.begin(), done_.end(), true); }

 private:
  float* mem_ = nullptr;
  size_t bytes_;
  std::vector<bool> done_;
  bool deferred_;
};

}  // namespace

std::unique_ptr<RingTransport> make_host_transport(size_t floats, int slots, HostCompletion completion) {
  return std::make_unique<HostTransport>(floats, slots, completion);
}

struct DeviceRing::Impl {
  struct Slot {
    bool in_use = false;                // submitted, not yet released
    std::shared_ptr<const Batch> held;  // until its copy has landed
  };
  std::unique_ptr<RingTransport> t;
  int capacity = 0, P = 0, L = 0, K = 0, cin = 0, cline = 0, cout = 0;
  size_t slot_floats = 0;
  std::vector<Slot> ring;
  int next = 0;
  mutable std::mutex mu;
  std::condition_variable released;
  std::function<void()> on_release;

  // Drops held batches whose copies completed. Caller holds mu.
  size_t poll_locked() {
    size_t held = 0;
    for (size_t k = 0; k < ring.size(); ++k) {
      if (!ring[k].held) continue;
      if (t->copied(int(k))) ring[k].held.reset();  // the pinned host slot goes back to its pool
      else ++held;
    }
    return held;
  }

  // Enqueues the copies of `batch` into slot `k` (free). Caller holds mu.
  DeviceBatch fill_locked(int k, std::shared_ptr<const Batch> batch) {
    Slot& s = ring[size_t(k)];
    poll_locked();
    if (s.held) {  // its previous copy is still running: the ring is shorter than the copy latency
      t->wait_copied_host(k);
      s.held.reset();
    }
    t->wait_read(k);  // the device does not overwrite the slot before the compute that read it
    const Batch& b = *batch;
    DeviceBatch d;
    d.slot = k;
    d.B = int(b.size), d.P = P, d.L = L;
    d.context = t->memory() + slot_floats * size_t(k);
    d.noisy_line = d.context + size_t(capacity) * P * cin;
    d.target_offset = d.noisy_line + size_t(capacity) * L * cline;
    if (K > 0) d.local = d.target_offset + size_t(capacity) * L * cout, d.K = K;
    d.epoch = b.epoch, d.index = b.index;
    auto put = [&](float* dst, const char* name) {
      const BatchTensor& bt = b.tensor(name);
      t->copy(dst, b.host(name), size_t(b.size) * size_t(bt.per_sample) * sizeof(float));
    };
    put(d.context, "context");
    put(d.noisy_line, "noisy_line");
    put(d.target_offset, "target_offset");
    if (K > 0) put(d.local, "local");
    t->mark_copied(k);
    s.held = std::move(batch);
    s.in_use = true;
    next = (k + 1) % int(ring.size());
    return d;
  }

  Slot& used_slot(const DeviceBatch& d, const char* who) {
    if (d.slot < 0 || d.slot >= int(ring.size()) || !ring[size_t(d.slot)].in_use)
      fail(who, "slot " + std::to_string(d.slot) + " is not in use");
    return ring[size_t(d.slot)];
  }
};

std::shared_ptr<DeviceRing> DeviceRing::create(const Backend& backend, int slots, int capacity, int P, int L,
                                               const ModelConfig& cfg, HostCompletion host) {
  if (slots <= 0 || capacity <= 0 || P <= 0 || L <= 0) fail("DeviceRing", "slots, capacity, P and L must be positive");
  const size_t floats = size_t(capacity) * (size_t(P) * cfg.in_channels + size_t(L) * cfg.line_channels +
                                            size_t(L) * cfg.out_channels +
                                            size_t(L) * std::max(cfg.local_k, 0) * cfg.in_channels) *
                        size_t(slots);
  std::unique_ptr<RingTransport> t;
  if (backend.is_cuda()) {
#ifdef SL_WITH_CUDA
    t = make_cuda_transport(backend.device, floats, slots);
#else
    fail("DeviceRing", "device " + backend.name() + " requested, but this build has no CUDA backend");
#endif
  } else {
    t = make_host_transport(floats, slots, host);
  }
  return std::make_shared<DeviceRing>(std::move(t), backend, slots, capacity, P, L, cfg);
}

DeviceRing::DeviceRing(std::unique_ptr<RingTransport> transport, const Backend& backend, int slots, int capacity,
                       int P, int L, const ModelConfig& cfg)
    : impl_(std::make_unique<Impl>()), backend_(backend), slots_(slots) {
  if (slots <= 0 || capacity <= 0 || P <= 0 || L <= 0) fail("DeviceRing", "slots, capacity, P and L must be positive");
  Impl& I = *impl_;
  I.t = std::move(transport);
  I.capacity = capacity, I.P = P, I.L = L;
  I.cin = cfg.in_channels, I.cline = cfg.line_channels, I.cout = cfg.out_channels;
  I.K = std::max(cfg.local_k, 0);
  I.slot_floats = size_t(capacity) * (size_t(P) * I.cin + size_t(L) * I.cline + size_t(L) * I.cout +
                                      size_t(L) * I.K * I.cin);
  if (I.t->bytes() < I.slot_floats * size_t(slots) * sizeof(float)) fail("DeviceRing", "transport memory too small");
  I.ring.resize(size_t(slots));
}

DeviceRing::~DeviceRing() {
  if (!impl_) return;
  // Consumers' streams are synchronised by their owners before the ring goes (the trainer
  // declares the ring before the model, so the model is destroyed first).
  try {
    impl_->t->synchronize();
  } catch (...) {
  }
  for (auto& s : impl_->ring) s.held.reset();
}

void* DeviceRing::copy_stream() const { return impl_->t->copy_stream(); }
size_t DeviceRing::device_bytes() const { return impl_->slot_floats * impl_->ring.size() * sizeof(float); }
int DeviceRing::in_use() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  int n = 0;
  for (const auto& s : impl_->ring) n += s.in_use;
  return n;
}

void DeviceRing::check(const Batch& b) const {
  const Impl& I = *impl_;
  auto expect = [&](const char* name, int64_t d1, int64_t d2) {
    const BatchTensor& t = b.tensor(name);
    if (t.shape.size() != 3 || t.shape[1] != d1 || t.shape[2] != d2)
      fail("DeviceRing", "tensor '" + t.name + "' has a shape other than [B, " + std::to_string(d1) + ", " +
                             std::to_string(d2) + "]");
  };
  expect("context", I.P, I.cin);
  expect("noisy_line", I.L, I.cline);
  expect("target_offset", I.L, I.cout);
  if (I.K > 0) {
    const BatchTensor& t = b.tensor("local");
    if (t.shape.size() != 4 || t.shape[1] != I.L || t.shape[2] != I.K || t.shape[3] != I.cin)
      fail("DeviceRing", "tensor 'local' has a shape other than [B, " + std::to_string(I.L) + ", " +
                             std::to_string(I.K) + ", " + std::to_string(I.cin) + "]");
  }
  if (b.size <= 0 || b.size > I.capacity)
    fail("DeviceRing", "batch of " + std::to_string(b.size) + " samples does not fit a ring slot of " +
                           std::to_string(I.capacity));
}

std::optional<DeviceBatch> DeviceRing::try_submit(std::shared_ptr<const Batch> batch) {
  if (!batch) fail("DeviceRing::submit", "null batch");
  check(*batch);
  Impl& I = *impl_;
  std::lock_guard<std::mutex> lock(I.mu);
  if (I.ring[size_t(I.next)].in_use) {
    I.poll_locked();  // the caller waits for a release anyway: hand finished host slots back now
    return std::nullopt;
  }
  return I.fill_locked(I.next, std::move(batch));
}

DeviceBatch DeviceRing::submit(std::shared_ptr<const Batch> batch) {
  if (!batch) fail("DeviceRing::submit", "null batch");
  check(*batch);
  Impl& I = *impl_;
  std::unique_lock<std::mutex> lock(I.mu);
  I.released.wait(lock, [&] { return !I.ring[size_t(I.next)].in_use; });
  return I.fill_locked(I.next, std::move(batch));
}

void DeviceRing::wait_copied(const DeviceBatch& d, void* stream) {
  Impl& I = *impl_;
  std::lock_guard<std::mutex> lock(I.mu);
  I.used_slot(d, "DeviceRing::wait_copied");
  I.t->consumer_wait(d.slot, stream);
}

void DeviceRing::release(const DeviceBatch& d, void* stream) {
  Impl& I = *impl_;
  std::function<void()> wake;
  {
    std::lock_guard<std::mutex> lock(I.mu);
    Impl::Slot& s = I.used_slot(d, "DeviceRing::release");
    I.t->mark_read(d.slot, stream);
    s.in_use = false;
    I.poll_locked();  // the consumer's steady beat: return finished host slots to their pool
    wake = I.on_release;
  }
  I.released.notify_all();
  if (wake) wake();
}

void DeviceRing::set_on_release(std::function<void()> f) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->on_release = std::move(f);
}

size_t DeviceRing::poll() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->poll_locked();
}

void DeviceRing::synchronize() {
  Impl& I = *impl_;
  std::lock_guard<std::mutex> lock(I.mu);
  I.t->synchronize();
  for (auto& s : I.ring) s.held.reset();
}

void DeviceRing::complete_copies() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto* h = dynamic_cast<HostTransport*>(impl_->t.get());
  if (!h) fail("DeviceRing::complete_copies", "only a host ring's copies can be completed by hand");
  h->complete_all();
}

void DeviceBatchHandle::wait_copied(void* stream) const { ring->wait_copied(*batch, stream); }
void DeviceBatchHandle::release(void* stream) {
  if (released) return;
  released = true;
  ring->release(*batch, stream);
}
DeviceBatchHandle::~DeviceBatchHandle() {
  if (released || !ring || !batch) return;
  try {
    ring->release(*batch, ring->copy_stream());  // unread: reusable once its own copy ran
  } catch (...) {
    // A destructor must not throw; a CUDA error here resurfaces at the next ring call.
  }
}

}  // namespace sl
