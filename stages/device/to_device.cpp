#include "stages/device/to_device.h"

#include "graph/error.h"
#include "graph/spec.h"
#include "graph/stage.h"
#include "graph/trace.h"
#include "kernels/backend.h"
#ifdef SL_WITH_CUDA
#include "kernels/cuda/nvtx.h"
#include "stages/device/copy_engine.h"
#endif

namespace sl {

#ifdef SL_WITH_CUDA
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
#else
void DeviceBatchHandle::wait_copied(void*) const {}
void DeviceBatchHandle::release(void*) { released = true; }
DeviceBatchHandle::~DeviceBatchHandle() = default;
#endif

namespace {

class ToDevice : public Stage {
 public:
  explicit ToDevice(const Params& p) : ring_slots_((int)p.get_int("ring")) {}
  void start(RunContext& ctx) override { cuda_ = device_is_cuda(ctx.device); }
  void process(Item in, const Position&, Emitter& out, RunContext& ctx) override {
    auto b = std::get<std::shared_ptr<Batch>>(in);
    if (!cuda_) {
      out.emit(std::move(b));  // the CPU backend trains on the host slot itself
      return;
    }
#ifdef SL_WITH_CUDA
    TraceScope ts(ctx.trace, "h2d.submit", "copy");
    if (!ring_) {
      const auto& c = b->tensor("context");
      const auto& n = b->tensor("noisy_line");
      ring_ = std::make_shared<DeviceRing>(ring_slots_, (int)b->capacity, (int)c.shape[1], (int)n.shape[1], ModelConfig{},
                                           Backend::parse(ctx.device).device);
    }
    auto handle = std::make_shared<DeviceBatchHandle>();
    handle->ring = ring_;
    handle->batch = std::make_shared<DeviceBatch>(ring_->submit(b));  // the ring holds b until its copy is done
    // Downstream gets the batch without its host slot: the slot goes back when the copy finishes.
    auto d = std::make_shared<Batch>();
    d->size = b->size;
    d->capacity = b->capacity;
    d->epoch = b->epoch;
    d->index = b->index;
    d->tensors = b->tensors;
    d->scene_index = b->scene_index;
    d->line_index = b->line_index;
    d->next = b->next;
    d->next_skip = b->next_skip;
    d->device = handle;
    out.emit(std::move(d));
#else
    throw Error("to_device: device " + ctx.device + " requested, but this build has no CUDA backend");
#endif
  }
  void finish(RunContext&) override {
#ifdef SL_WITH_CUDA
    if (ring_) ring_->synchronize();
#endif
  }

 private:
  int ring_slots_;
  bool cuda_ = false;
#ifdef SL_WITH_CUDA
  std::shared_ptr<DeviceRing> ring_;
#endif
};

}  // namespace

void register_device_stages(StageRegistry& r) {
  StageSchema s;
  s.type = "to_device";
  s.group = "device";
  s.doc = "host batch -> device: async H2D copy on a copy stream into a ring (pass-through on the CPU backend)";
  s.input = Kind::Batch;
  s.output = Kind::DeviceBatch;
  s.serial_only = true;
  s.params = {p_pos_int("ring", 3, "device buffers in the ring: batches copied ahead of compute (keep below batch.slots)")};
  s.factory = [](const Params& p) { return std::make_unique<ToDevice>(p); };
  r.add(std::move(s));
}

}  // namespace sl
