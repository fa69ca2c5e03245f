// The batch stage: packs samples into the slots of a fixed pool (the types: graph/batch.h).
#include <cstdlib>
#include <cstring>
#include <deque>

#include "graph/batch.h"
#include "graph/error.h"
#include "graph/spec.h"

namespace sl {

namespace {

// batch: serial, in order. Holds source items it could not place yet (no free slot) and
// releases each once all of its samples sit in slots.
class BatchStage : public Stage {
 public:
  explicit BatchStage(const Params& p)
      : B_(p.get_int("size")), drop_last_(p.get_bool("drop_last")), slots_(p.get_int("slots")),
        keys_(p.get_strings("keys")), where_(p.where()) {
    if (keys_.empty()) fail(p.where("keys"), "needs at least one sample key");
  }
  ~BatchStage() override {
    if (pool_) pool_->set_on_return(nullptr);  // batches may outlive this stage
  }
  bool defers_release() const override { return true; }
  void start(RunContext& ctx) override {
    pinned_ = device_is_cuda(ctx.device);
    skip_epoch_ = ctx.start.epoch;
    skip_index_ = ctx.start.index;
    skip_left_ = ctx.start_skip_samples;
  }
  void process_all(const Envelope& in, Emitter& out, RunContext& ctx) override {
    Pending p;
    p.pos = in.pos;
    for (const auto& it : in.items) p.samples.push_back(std::get<std::shared_ptr<Sample>>(it));
    if (skip_left_ > 0 && in.pos.epoch == skip_epoch_ && in.pos.index == skip_index_) {
      p.next = (size_t)std::min<int64_t>(skip_left_, (int64_t)p.samples.size());  // consumed before the resume
      skip_left_ = 0;
    }
    pending_.push_back(std::move(p));
    drain(out);
  }
  void on_marker(const Envelope& m, Emitter& out, RunContext& ctx) override {
    Pending p;
    p.marker = true;
    p.type = m.type;
    p.pos = m.pos;
    pending_.push_back(std::move(p));
    drain(out);
  }
  void on_wake(Emitter& out, RunContext& ctx) override { drain(out); }

 private:
  struct Pending {
    bool marker = false;
    Envelope::Type type = Envelope::Type::Data;
    Position pos;
    std::vector<std::shared_ptr<Sample>> samples;
    size_t next = 0;
  };

  void make_pool(const Sample& s) {
    size_t offset = 0;
    for (const auto& k : keys_) {
      const Tensor& t = s.at(k);
      BatchTensor bt;
      bt.name = k;
      bt.shape = {B_};
      for (auto d : t.shape) bt.shape.push_back(d);
      bt.per_sample = t.numel();
      bt.offset = offset;
      offset += (size_t)(bt.per_sample * B_);
      offset = (offset + 15) / 16 * 16;  // 64-byte aligned tensors inside the slot
      layout_.push_back(bt);
    }
    pool_ = std::make_shared<SlotPool>((size_t)slots_, offset, pinned_);
    Stage* self = this;
    pool_->set_on_return([self] { self->wake(); });
  }

  // Why `s` cannot go into a batch laid out as `layout_` (empty: it fits).
  std::string misfit(const Sample& s) const {
    for (const auto& bt : layout_) {
      auto it = s.tensors.find(bt.name);
      if (it == s.tensors.end()) return "has no tensor '" + bt.name + "'";
      const Tensor& t = it->second;
      if (t.numel() != bt.per_sample || (int64_t)t.shape.size() + 1 != (int64_t)bt.shape.size())
        return "tensor '" + bt.name + "' has shape " + t.shape_str() +
               ", but the batch was laid out for the first sample's shape; make every sample the same size "
               "(resample / perturb_line points)";
    }
    return "";
  }

  void copy_in(Batch& b, const Sample& s) {
    for (const auto& bt : b.tensors) {
      const Tensor& t = s.at(bt.name);
      std::memcpy(b.slot->data() + bt.offset + b.size * bt.per_sample, t.data.data(), bt.per_sample * sizeof(float));
    }
    b.scene_index.push_back((int32_t)s.scene_index);
    b.line_index.push_back((int32_t)s.line_index);
    b.category.push_back(s.scene && s.line_index >= 0 && (size_t)s.line_index < s.scene->lines.size()
                             ? s.scene->lines[(size_t)s.line_index].category
                             : std::string());
    b.scene_origin.push_back(s.scene && s.scene->cloud ? s.scene->cloud->origin : std::array<double, 3>{0, 0, 0});
    ++b.size;
  }

  void emit_open(Emitter& out, Position next, int64_t next_skip) {
    open_->next = next;
    open_->next_skip = next_skip;
    out.emit(std::move(open_));
    open_.reset();
  }

  void drain(Emitter& out) {
    while (!pending_.empty()) {
      Pending& p = pending_.front();
      if (p.marker) {
        if (open_ && (p.type == Envelope::Type::EpochEnd || p.type == Envelope::Type::EndOfStream)) {
          if (!drop_last_ && open_->size > 0) emit_open(out, p.pos, 0);
          open_.reset();  // drop_last: the partial batch is dropped, its slot returns
        }
        if (p.type == Envelope::Type::EpochEnd) batch_in_epoch_ = 0;
        out.emit_marker(p.type, p.pos);
        pending_.pop_front();
        continue;
      }
      while (p.next < p.samples.size()) {
        if (!pool_) make_pool(*p.samples[p.next]);
        const std::string why = misfit(*p.samples[p.next]);
        if (!why.empty()) {
          // This sample alone goes (skip: recorded; fail: the run stops); the queue moves on, so
          // the source items behind it are still released and the run never stalls on it.
          reject(p.samples[p.next]->describe(), why);
          p.samples[p.next].reset();
          ++p.next;
          continue;
        }
        if (!open_) {
          auto slot = pool_->acquire();
          if (!slot) return;  // every slot is in use downstream: wait for a wake
          open_ = std::make_shared<Batch>();
          open_->capacity = B_;
          open_->epoch = p.pos.epoch;
          open_->index = batch_in_epoch_++;
          open_->tensors = layout_;
          open_->slot = std::move(slot);
        }
        copy_in(*open_, *p.samples[p.next]);
        p.samples[p.next].reset();  // the sample's memory goes now, not when the envelope does
        ++p.next;
        if (open_->size == B_) {
          if (p.next < p.samples.size()) emit_open(out, p.pos, (int64_t)p.next);
          else emit_open(out, Position{p.pos.epoch, p.pos.index + 1}, 0);
        }
      }
      release_source_items(1);
      pending_.pop_front();
    }
  }

  int64_t B_;
  bool drop_last_;
  int64_t slots_;
  std::vector<std::string> keys_;
  std::string where_;
  bool pinned_ = false;
  std::vector<BatchTensor> layout_;
  std::shared_ptr<SlotPool> pool_;
  std::shared_ptr<Batch> open_;
  std::deque<Pending> pending_;
  int64_t batch_in_epoch_ = 0;
  int64_t skip_epoch_ = 0, skip_index_ = 0, skip_left_ = 0;
};


void register_batch_stages(StageRegistry& r) {
  StageSchema s;
  s.type = "batch";
  s.group = "batching";
  s.doc = "packs B samples into contiguous [B,...] float32 tensors in a fixed pool of (pinned) slots";
  s.input = Kind::Sample;
  s.output = Kind::Batch;
  s.serial_only = true;
  s.requires_from_param = "keys";
  s.params = {
      p_pos_int("size", 64, "samples per batch (B)"),
      p_bool("drop_last", true, "drop the last, partial batch of each epoch"),
      p_pos_int("slots", 4, "batch slots in the pool: batches in flight between here and the trainer"),
      p_strings("keys", {"context", "noisy_line", "target_offset"}, "sample tensors to pack, in slot order"),
  };
  s.factory = [](const Params& p) { return std::make_unique<BatchStage>(p); };
  s.infer = InferRole::Data;  // infer batches its samples itself
  r.add(std::move(s));
}

SL_REGISTER_STAGES(register_batch_stages);
}  // namespace

}  // namespace sl
