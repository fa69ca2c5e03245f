// Batches, slots and their pool (graph/batch.h); the batch stage is stages/batching/batch.cpp.
#include "graph/batch.h"

#include <cstdlib>
#include <cstring>
#include <deque>

#include "graph/error.h"
#include "graph/pinned_memory.h"

namespace sl {

bool device_is_cuda(const std::string& device) { return device.rfind("cuda", 0) == 0; }

HostBuffer::HostBuffer(size_t bytes, bool pinned) : bytes_(bytes) {
  if (pinned) {
    data_ = static_cast<float*>(cuda_host_alloc(bytes));  // null when not possible
    pinned_ = data_ != nullptr;
  }
  if (!data_) {
    data_ = static_cast<float*>(std::aligned_alloc(64, (bytes + 63) / 64 * 64));
    if (!data_) throw Error("batch: cannot allocate a slot of " + std::to_string(bytes) + " bytes");
  }
}

HostBuffer::~HostBuffer() {
  if (pinned_) cuda_host_free(data_);
  else std::free(data_);
}

const BatchTensor& Batch::tensor(const std::string& name) const {
  for (const auto& t : tensors)
    if (t.name == name) return t;
  throw Error("batch has no tensor '" + name + "'");
}

SlotPool::SlotPool(size_t slots, size_t floats_per_slot, bool pinned) {
  for (size_t i = 0; i < slots; ++i) {
    all_.push_back(std::make_unique<HostBuffer>(floats_per_slot * sizeof(float), pinned));
    free_.push_back(all_.back().get());
  }
}

std::shared_ptr<HostBuffer> SlotPool::acquire() {
  std::lock_guard<std::mutex> lock(mu_);
  if (free_.empty()) return nullptr;
  HostBuffer* b = free_.back();
  free_.pop_back();
  auto self = shared_from_this();
  return std::shared_ptr<HostBuffer>(b, [self](HostBuffer* p) { self->give_back(p); });
}

void SlotPool::give_back(HostBuffer* b) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    free_.push_back(b);
  }
  std::lock_guard<std::recursive_mutex> lock(callback_mu_);
  if (on_return_) on_return_();
}

void SlotPool::set_on_return(std::function<void()> f) {
  std::lock_guard<std::recursive_mutex> lock(callback_mu_);
  on_return_ = std::move(f);
}
}  // namespace sl
