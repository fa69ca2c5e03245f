// DeviceRing: host-to-device copies of batches that overlap compute, with no host waits in the
// steady state. Plain C++ header (streams are cudaStream_t as void*); defined only in builds
// with CUDA (SL_WITH_CUDA).
//
//   host batch (pinned slot) --H2D on copy stream--> ring slot k --event--> consumer's stream
//                                                                            waits (GPU side)
// Typical use: the to_device stage submits on its thread; the trainer, on ITS thread and just
// before it reads the slot, makes the model's own stream wait (so nothing is ever enqueued on a
// stream another thread may be capturing into a CUDA graph):
//   DeviceBatch d = ring.submit(batch);                 // to_device: enqueue H2D, return
//   ring.wait_copied(d, model_stream);                  // trainer: GPU-side wait
//   model.load_inputs(d.context, d.noisy_line, d.target_offset, d.B);  // D2D, fixed inputs
//   ring.release(d, model_stream);                      // slot k reusable after that read
//   model.step_inputs(d.B, adam);                       // the step's CUDA graph
//
// Lifetimes: the ring holds each submitted host Batch (hence its pinned slot) until its copy
// event has completed -- checked with cudaEventQuery at every submit(), release() and poll(), so
// the slot returns to the batch stage's pool without anyone waiting. The ring holds at most
// `slots` host batches: give the batch stage MORE pinned slots than the ring has (or call
// poll() while waiting for batches), otherwise the batch stage can starve for a slot that only
// the next submit() would hand back. A ring slot is overwritten only
// after the event recorded by release() has completed: the copy stream waits for it on the GPU
// (cudaStreamWaitEvent), never the host.
// Host waits happen only when: submit() finds the next slot not yet release()d (it blocks on a
// condition variable until another thread releases it: the ring bounds the batches in flight);
// a slot is reused while its previous copy is still running (a ring too small to cover the
// copy latency); synchronize(); the destructor.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>

#include "kernels/model.h"
#include "stages/batching/batch.h"

namespace sl {

// A batch in one ring slot (device pointers, row-major, B = samples actually copied).
struct DeviceBatch {
  int slot = -1;
  int B = 0, P = 0, L = 0;
  float* context = nullptr;        // [B, P, in_channels]
  float* noisy_line = nullptr;     // [B, L, line_channels]
  float* target_offset = nullptr;  // [B, L, out_channels]
  int64_t epoch = 0, index = 0;    // of the host batch
};

class DeviceRing {
 public:
  // `slots` device buffers of `capacity` samples each (context [P, in], noisy_line [L, line],
  // target_offset [L, out] per sample, channel counts from cfg), ONE device allocation; one
  // non-blocking copy stream on `device`.
  DeviceRing(int slots, int capacity, int P, int L, const ModelConfig& cfg, int device = 0);
  ~DeviceRing();  // waits for both streams, then frees (releasing every held batch)
  DeviceRing(const DeviceRing&) = delete;
  DeviceRing& operator=(const DeviceRing&) = delete;

  void* copy_stream() const;
  int slots() const;
  size_t device_bytes() const;

  // Copies batch->size samples of "context", "noisy_line", "target_offset" into the next slot
  // on the copy stream. Throws sl::Error if the batch's shapes do not match the ring (P, L,
  // channels, size <= capacity).
  DeviceBatch submit(std::shared_ptr<const Batch> batch);
  // GPU-side: work enqueued on `stream` after this call runs after b's copy.
  void wait_copied(const DeviceBatch& b, void* stream);
  // Call after enqueueing, on `stream`, the last work that reads `b` (a batch nobody read:
  // pass copy_stream()).
  void release(const DeviceBatch& b, void* stream);
  // Drops host batches whose copies completed; returns how many are still held.
  size_t poll();
  // Host waits for both streams, drops every held batch.
  void synchronize();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sl
