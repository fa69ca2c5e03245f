// DeviceRing: host-to-device copies of batches that overlap compute, with no host waits in the
// steady state. The slot accounting (which slot is next, which are being read, which host
// batches are still being copied from) is backend-neutral and lives here; what moves bytes and
// tracks completion is a RingTransport: CUDA (a copy stream and events, device/ring_cuda.cpp)
// or the host (plain memcpy, optionally with completion deferred until the test says so), so
// every rule below runs in CI without a GPU.
//
//   host batch (pinned slot) --copy on copy stream--> ring slot k --event--> consumer's stream
//                                                                            waits (GPU side)
// Typical use: the to_device stage submits on its thread without ever blocking; the trainer, on
// ITS thread and just before it reads the slot, makes the model's own stream wait (so nothing
// is enqueued on a stream another thread may be capturing into a CUDA graph):
//   auto d = ring.try_submit(batch);   // to_device: enqueue the copy; nullopt: slot still read,
//                                      // hold the batch, on_release() wakes the stage
//   ring.wait_copied(*d, model_stream);                 // trainer: GPU-side wait
//   model.load_inputs(d->context, d->noisy_line, d->target_offset, d->B);  // fixed inputs
//   ring.release(*d, model_stream);                     // slot k reusable after that read
//   model.step_inputs(d->B, adam);                      // the step's CUDA graph
//
// Lifetimes: the ring holds each submitted host Batch (hence its pinned slot) until its copy
// has completed -- checked at every submit, release() and poll(), so the slot returns to the
// batch stage's pool without anyone waiting. The ring holds at most `slots` host batches: the
// batch stage needs MORE pinned slots than the ring has (validation refuses ring >= slots). A
// ring slot is overwritten only after the read recorded by release() has run: the copy waits
// for it on the device, never the host.
// Host waits happen only in: submit() (the blocking form, for benchmarks), a slot reused while
// its previous copy still runs (a ring too small to cover the copy latency), synchronize(),
// the destructor.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

#include "kernels/backend.h"
#include "kernels/model.h"
#include "graph/batch.h"

namespace sl {

// A batch in one ring slot (backend pointers, row-major, B = samples actually copied).
struct DeviceBatch {
  int slot = -1;
  int B = 0, P = 0, L = 0;
  float* context = nullptr;        // [B, P, in_channels]
  float* noisy_line = nullptr;     // [B, L, line_channels]
  float* target_offset = nullptr;  // [B, L, out_channels]
  float* local = nullptr;          // [B, L, K, in_channels]; null unless the ring carries it (K > 0)
  int K = 0;
  int64_t epoch = 0, index = 0;    // of the host batch
};

// What moves bytes into ring slots and says when they have landed / been read.
class RingTransport {
 public:
  virtual ~RingTransport() = default;
  virtual float* memory() = 0;  // slots x slot_floats floats on the backend
  virtual size_t bytes() const = 0;
  virtual void* copy_stream() = 0;                            // null on the host
  virtual void wait_read(int slot) = 0;                       // copies into `slot` wait for its last read
  virtual void copy(float* dst, const float* src, size_t bytes) = 0;  // enqueued on the copy stream
  virtual void mark_copied(int slot) = 0;                     // after the slot's copies
  virtual bool copied(int slot) = 0;                          // non-blocking
  virtual void wait_copied_host(int slot) = 0;                // the host waits
  virtual void consumer_wait(int slot, void* stream) = 0;     // `stream` waits for the copy
  virtual void mark_read(int slot, void* stream) = 0;         // after the last read on `stream`
  virtual void synchronize() = 0;                             // the copy stream has drained
};

// A host transport's copies complete at once, or (Deferred, for tests of the accounting) only
// when complete_copies() says so -- like an asynchronous copy engine that has not finished.
enum class HostCompletion { Immediate, Deferred };

class DeviceRing {
 public:
  // `slots` buffers of `capacity` samples each (context [P, in], noisy_line [L, line],
  // target_offset [L, out] per sample, channel counts from cfg; and local [L, K, in] when
  // cfg.local_k = K > 0: the points grouped around each line point), ONE allocation on `backend`.
  static std::shared_ptr<DeviceRing> create(const Backend& backend, int slots, int capacity, int P, int L,
                                            const ModelConfig& cfg, HostCompletion host = HostCompletion::Immediate);
  DeviceRing(std::unique_ptr<RingTransport> transport, const Backend& backend, int slots, int capacity, int P, int L,
             const ModelConfig& cfg);
  ~DeviceRing();  // waits for the copy stream, then frees (releasing every held batch)
  DeviceRing(const DeviceRing&) = delete;
  DeviceRing& operator=(const DeviceRing&) = delete;

  const Backend& backend() const { return backend_; }
  void* copy_stream() const;
  int slots() const { return slots_; }
  size_t device_bytes() const;
  int in_use() const;  // slots submitted and not yet released

  // Throws sl::Error if the batch's tensors do not match the ring ("context" [P, in],
  // "noisy_line" [L, line], "target_offset" [L, out], "local" [L, K, in] when K > 0,
  // 0 < size <= capacity).
  void check(const Batch& batch) const;
  // Copies batch->size samples into the next slot, or returns nullopt without waiting when that
  // slot is still being read (release() then calls on_release).
  std::optional<DeviceBatch> try_submit(std::shared_ptr<const Batch> batch);
  // The same, waiting on the host for the slot (benchmarks and tests).
  DeviceBatch submit(std::shared_ptr<const Batch> batch);
  // Work enqueued on `stream` after this call runs after b's copy (a GPU-side wait).
  void wait_copied(const DeviceBatch& b, void* stream);
  // Call after enqueueing, on `stream`, the last work that reads `b` (a batch nobody read:
  // pass copy_stream()). Then on_release runs, on the caller's thread.
  void release(const DeviceBatch& b, void* stream);
  void set_on_release(std::function<void()> f);
  // Drops host batches whose copies completed; returns how many are still held.
  size_t poll();
  // Host waits for the copy stream, drops every held batch.
  void synchronize();
  // Host transport in Deferred mode: every copy so far has landed.
  void complete_copies();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  Backend backend_;
  int slots_ = 0;
};

// What a device batch carries in Batch::device: the ring slot and the ring itself. The
// consumer calls release(stream) after enqueueing its last read; a handle dropped unread (a
// batch after max_steps, a NaN loss, a trainer error) releases its slot when destroyed, so
// the ring never waits for a slot nobody will give back.
struct DeviceBatchHandle {
  std::shared_ptr<DeviceRing> ring;
  std::shared_ptr<DeviceBatch> batch;
  bool released = false;
  void wait_copied(void* stream) const;  // GPU-side wait of `stream` for the slot's copy
  void release(void* stream);            // after the last read enqueued on `stream`
  ~DeviceBatchHandle();
};

std::unique_ptr<RingTransport> make_host_transport(size_t floats, int slots, HostCompletion completion);
// Defined with CUDA only (device/ring_cuda.cpp).
std::unique_ptr<RingTransport> make_cuda_transport(int device, size_t floats, int slots);

}  // namespace sl
