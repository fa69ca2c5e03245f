// Batches: B samples packed into contiguous [B, ...] float32 tensors inside a slot taken from
// a fixed pool. The pool is the free list: a slot goes back when the last holder of the Batch
// lets go (the trainer after its step, or the device copy once its event completed), and the
// batch stage, woken by that, continues filling. Memory: slots x slot bytes, fixed by config.
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "graph/stage.h"

namespace sl {

// Host memory for one batch. With CUDA in the build and a GPU in use, it is page-locked
// (cudaHostAlloc) so host-to-device copies run asynchronously at full bandwidth.
class HostBuffer {
 public:
  HostBuffer(size_t bytes, bool pinned);
  ~HostBuffer();
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  float* data() { return data_; }
  size_t bytes() const { return bytes_; }
  bool pinned() const { return pinned_; }

 private:
  float* data_ = nullptr;
  size_t bytes_ = 0;
  bool pinned_ = false;
};

struct BatchTensor {
  std::string name;
  std::vector<int64_t> shape;  // [B, ...] with B = the batch capacity
  size_t offset = 0;           // floats from the start of the slot
  int64_t per_sample = 0;      // floats per sample
};

class SlotPool;
struct DeviceBatchHandle;  // device/copy_engine.h

struct Batch {
  int64_t size = 0;      // samples in this batch (< capacity only for a last, partial batch)
  int64_t capacity = 0;  // B
  int64_t epoch = 0;
  int64_t index = 0;     // batch number within the epoch
  std::vector<BatchTensor> tensors;
  std::vector<int32_t> scene_index, line_index;  // provenance per sample
  std::vector<std::string> category;             // per sample: its line's category ("" when unknown)
  // Per sample: the origin of its scene's cloud (world = local + origin; formats/clouds/origin.h),
  // {0, 0, 0} for a sample without a scene (a sample cache).
  std::vector<std::array<double, 3>> scene_origin;
  // Data position after this batch: resume here to continue with the next batch.
  Position next;
  int64_t next_skip = 0;  // samples of source item `next.index` already consumed
  std::shared_ptr<HostBuffer> slot;
  const BatchTensor& tensor(const std::string& name) const;
  float* host(const std::string& name) const { return slot->data() + tensor(name).offset; }
  // The batch's copy in a device ring slot (set by to_device when the run uses a GPU, or a host
  // ring in tests; null otherwise).
  std::shared_ptr<DeviceBatchHandle> device;
};

// A fixed set of slots; acquire() returns null when all are out. A slot comes back when the
// last shared_ptr to it is dropped, and then `on_return` runs (it wakes the batch stage). Once
// set_on_return(nullptr) has returned, no callback runs any more.
class SlotPool : public std::enable_shared_from_this<SlotPool> {
 public:
  SlotPool(size_t slots, size_t floats_per_slot, bool pinned);
  std::shared_ptr<HostBuffer> acquire();
  void set_on_return(std::function<void()> f);
  size_t capacity() const { return all_.size(); }

 private:
  void give_back(HostBuffer* b);
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<HostBuffer>> all_;
  std::vector<HostBuffer*> free_;
  // Held while on_return_ runs: set_on_return(nullptr) (the batch stage's destructor) waits for
  // a callback in progress on another thread (a consumer releasing a batch as the run ends).
  std::recursive_mutex callback_mu_;
  std::function<void()> on_return_;
};


// Is a CUDA device going to be used by this run (decides pinned vs plain host memory)?
bool device_is_cuda(const std::string& device);

}  // namespace sl
