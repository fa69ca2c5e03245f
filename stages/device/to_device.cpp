#include "stages/device/to_device.h"

#include <deque>
#include <optional>

#include "graph/error.h"
#include "graph/spec.h"
#include "graph/stage.h"
#include "graph/trace.h"
#include "kernels/backend.h"
#include "device/copy_engine.h"

namespace sl {

namespace {

// to_device: serial, in order, and never blocks its worker thread. A batch that finds the next
// ring slot still being read waits here (with any markers behind it) until the consumer's
// release() wakes the stage -- a thread blocked on the ring instead would hang a run whose
// only thread is needed to run the consumer (--threads 1).
class ToDevice : public Stage {
 public:
  ToDevice(const Params& p, bool ring_on_host) : ring_slots_((int)p.get_int("ring")), ring_on_host_(ring_on_host) {}
  ~ToDevice() override {
    if (ring_) ring_->set_on_release(nullptr);  // the ring may outlive this stage
  }
  void start(RunContext& ctx) override {
    backend_ = device_is_cuda(ctx.device) ? Backend::parse(ctx.device) : Backend::cpu();
#ifndef SL_WITH_CUDA
    if (backend_.is_cuda())
      throw Error("to_device: device " + ctx.device + " requested, but this build has no CUDA backend");
#endif
  }
  void process(Item in, const Position&, Emitter& out, RunContext& ctx) override {
    auto b = std::get<std::shared_ptr<Batch>>(in);
    if (!backend_.is_cuda() && !ring_on_host_) {
      out.emit(std::move(b));  // the CPU backend trains on the host slot itself
      return;
    }
    if (!ring_) {
      const auto& c = b->tensor("context");
      const auto& n = b->tensor("noisy_line");
      // The ring carries what the batches carry: `local` [B, L, K, 4] too when the pipeline groups
      // points around the line (the local branch's input).
      ModelConfig carry;
      carry.line_channels = (int)n.shape[2];  // x y z, and category_input's one-hot when there is one
      for (const BatchTensor& t : b->tensors)
        if (t.name == "local" && t.shape.size() == 4) carry.local_k = (int)t.shape[2];
      ring_ = DeviceRing::create(backend_, ring_slots_, (int)b->capacity, (int)c.shape[1], (int)n.shape[1], carry);
      Stage* self = this;
      ring_->set_on_release([self] { self->wake(); });
    }
    ring_->check(*b);  // a batch that can never fit fails here, on its own item, not in the queue
    pending_.push_back({std::move(b)});
    drain(out, ctx);
  }
  void on_marker(const Envelope& m, Emitter& out, RunContext& ctx) override {
    pending_.push_back({nullptr, m.type, m.pos});
    drain(out, ctx);
  }
  void on_wake(Emitter& out, RunContext& ctx) override { drain(out, ctx); }
  void finish(RunContext&) override {
    if (ring_) ring_->synchronize();
  }

 private:
  struct Pending {
    std::shared_ptr<Batch> batch;  // null: a marker
    Envelope::Type type = Envelope::Type::Data;
    Position pos;
  };

  void drain(Emitter& out, RunContext& ctx) {
    while (!pending_.empty()) {
      Pending& p = pending_.front();
      if (!p.batch) {
        out.emit_marker(p.type, p.pos);
        pending_.pop_front();
        continue;
      }
      std::optional<DeviceBatch> d;
      {
        TraceScope ts(ctx.trace, "h2d.submit", "copy");
        try {
          d = ring_->try_submit(p.batch);  // the ring holds the host batch until its copy is done
        } catch (...) {
          pending_.pop_front();  // the failed batch goes; the queue behind it is not stuck:
          if (!pending_.empty()) wake();  // what waited behind it drains on the next wake
          throw;
        }
      }
      if (!d) return;  // every ring slot is being read: the consumer's release() wakes us
      auto handle = std::make_shared<DeviceBatchHandle>();
      handle->ring = ring_;
      handle->batch = std::make_shared<DeviceBatch>(*d);
      // Downstream gets the batch without its host slot: the slot goes back when the copy finishes.
      const Batch& b = *p.batch;
      auto db = std::make_shared<Batch>();
      db->size = b.size;
      db->capacity = b.capacity;
      db->epoch = b.epoch;
      db->index = b.index;
      db->tensors = b.tensors;
      db->scene_index = b.scene_index;
      db->line_index = b.line_index;
      db->scene_origin = b.scene_origin;
      db->next = b.next;
      db->next_skip = b.next_skip;
      db->device = handle;
      pending_.pop_front();
      out.emit(std::move(db));
    }
  }

  int ring_slots_;
  bool ring_on_host_;
  Backend backend_;
  std::shared_ptr<DeviceRing> ring_;
  std::deque<Pending> pending_;
};

}  // namespace

std::unique_ptr<Stage> make_to_device_stage(const Params& p, bool ring_on_host) {
  return std::make_unique<ToDevice>(p, ring_on_host);
}

namespace {
void register_device_stages(StageRegistry& r) {
  StageSchema s;
  s.type = "to_device";
  s.group = "device";
  s.doc = "host batch -> device: async H2D copy on a copy stream into a ring (pass-through on the CPU backend)";
  s.input = Kind::Batch;
  s.output = Kind::DeviceBatch;
  s.serial_only = true;
  s.params = {p_pos_int("ring", 3, "device buffers in the ring: batches copied ahead of compute (keep below batch.slots)")};
  s.factory = [](const Params& p) { return make_to_device_stage(p, false); };
  s.infer = InferRole::Data;  // infer batches its samples itself
  r.add(std::move(s));
}

SL_REGISTER_STAGES(register_device_stages);
}  // namespace

}  // namespace sl
