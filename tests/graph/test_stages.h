// Small stages for engine tests: a counting source, a fan-out stage with seeded values and an
// optional failure, a jittery parallel stage, and a recording sink that can be slow or cancel.
#pragma once
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "graph/error.h"
#include "graph/spec.h"
#include "graph/stage.h"
#include "graph/batch.h"
#include "geometry/rng.h"

namespace sl::test {

struct Probe {
  std::mutex mu;
  std::vector<float> values;       // what the sink saw, in order
  std::vector<int64_t> markers;    // epoch-end markers seen by the sink (epoch numbers)
  std::atomic<int64_t> made{0}, consumed{0}, max_in_flight{0};
  std::atomic<bool>* cancel_flag = nullptr;
  int64_t cancel_after = -1;
  bool finished = false;
  std::vector<const void*> slots_seen;
  void reset() {
    std::lock_guard<std::mutex> l(mu);
    values.clear();
    markers.clear();
    made = consumed = max_in_flight = 0;
    cancel_flag = nullptr;
    cancel_after = -1;
    finished = false;
    slots_seen.clear();
  }
};
inline Probe& probe() {
  static Probe p;
  return p;
}

class CountSource : public SourceStage {
 public:
  explicit CountSource(const Params& p) : n_(p.get_int("n")) {}
  int64_t epoch_size() override { return n_; }
  Item make(int64_t epoch, int64_t index, RunContext&) override {
    auto& pr = probe();
    int64_t inflight = ++pr.made - pr.consumed;
    int64_t m = pr.max_in_flight;
    while (inflight > m && !pr.max_in_flight.compare_exchange_weak(m, inflight)) {}
    auto r = std::make_shared<SceneRef>();
    r->scene_index = index;
    r->name = "item" + std::to_string(index);
    r->cloud_path = "mem://item" + std::to_string(index);
    return std::shared_ptr<const SceneRef>(r);
  }

 private:
  int64_t n_;
};

// One SceneRef -> k samples with seeded values; throws on scene `fail_on`.
class Expand : public Stage {
 public:
  explicit Expand(const Params& p) : k_(p.get_int("k")), fail_on_(p.get_int("fail_on")) {}
  void process(Item in, const Position& pos, Emitter& out, RunContext& ctx) override {
    const auto& ref = std::get<std::shared_ptr<const SceneRef>>(in);
    if (ref->scene_index == fail_on_) throw Error(ref->cloud_path + ": broken on purpose");
    for (int64_t l = 0; l < k_; ++l) {
      auto s = std::make_shared<Sample>();
      s->scene_index = ref->scene_index;
      s->line_index = l;
      s->epoch = pos.epoch;
      s->seed = sample_seed(ctx.seed, pos.epoch, ref->scene_index, l);
      Tensor t({1});
      t.data[0] = (float)(Rng(s->seed).uniform() + (double)ref->scene_index);
      s->tensors["v"] = t;
      out.emit(s);
    }
  }

 private:
  int64_t k_, fail_on_;
};

// Sample -> Sample, squares "v" into "w" after a seeded, random pause (scrambles completion order).
class Jitter : public Stage {
 public:
  explicit Jitter(const Params& p) : max_us_(p.get_int("max_us")) {}
  void process(Item in, const Position&, Emitter& out, RunContext&) override {
    auto s = std::get<std::shared_ptr<Sample>>(in);
    Rng r(s->seed ^ 0x77);
    std::this_thread::sleep_for(std::chrono::microseconds(r.below((uint64_t)max_us_ + 1)));
    Tensor w({1});
    w.data[0] = s->at("v").data[0] * s->at("v").data[0];
    s->tensors["w"] = w;
    out.emit(s);
  }

 private:
  int64_t max_us_;
};

class RecordSink : public Stage {
 public:
  explicit RecordSink(const Params& p) : sleep_us_(p.get_int("sleep_us")), key_(p.get_string("key")) {}
  void process(Item in, const Position&, Emitter&, RunContext& ctx) override {
    auto& pr = probe();
    if (sleep_us_) std::this_thread::sleep_for(std::chrono::microseconds(sleep_us_));
    std::lock_guard<std::mutex> l(pr.mu);
    if (auto* b = std::get_if<std::shared_ptr<Batch>>(&in)) {
      const float* v = (*b)->host(key_);
      for (int64_t i = 0; i < (*b)->size; ++i) pr.values.push_back(v[i]);
      pr.slots_seen.push_back((*b)->slot->data());
    } else {
      pr.values.push_back(std::get<std::shared_ptr<Sample>>(in)->at(key_).data[0]);
    }
    if (pr.cancel_flag && pr.cancel_after >= 0 && (int64_t)pr.values.size() >= pr.cancel_after) pr.cancel_flag->store(true);
  }
  void on_marker(const Envelope& m, Emitter& out, RunContext&) override {
    auto& pr = probe();
    pr.consumed++;  // markers are source items too
    if (m.type == Envelope::Type::EpochEnd) {
      std::lock_guard<std::mutex> l(pr.mu);
      pr.markers.push_back(m.pos.epoch);
    }
  }
  void finish(RunContext&) override { probe().finished = true; }

 private:
  int64_t sleep_us_;
  std::string key_;
};

// Counts a source item as consumed when the (serial) sink has processed its envelope.
class CountingSink : public RecordSink {
 public:
  using RecordSink::RecordSink;
  bool defers_release() const override { return true; }
  void process_all(const Envelope& in, Emitter& out, RunContext& ctx) override {
    for (const auto& it : in.items) process(it, in.pos, out, ctx);
    probe().consumed++;
    release_source_items(1);
  }
};

inline void register_test_stages() {
  static std::once_flag once;
  std::call_once(once, [] {
    auto& r = StageRegistry::instance();
    {
      StageSchema s{"test_source", "emits n items per epoch", "test", Kind::None, Kind::SceneRef};
      s.params = {p_pos_int("n", 10, "items per epoch")};
      s.factory = [](const Params& p) { return std::make_unique<CountSource>(p); };
      r.add(s);
    }
    {
      StageSchema s{"test_expand", "one item -> k samples", "test", Kind::SceneRef, Kind::Sample};
      s.produces_keys = {"v"};
      s.params = {p_pos_int("k", 3, "samples per item"), p_int("fail_on", -1, "item index that throws")};
      s.factory = [](const Params& p) { return std::make_unique<Expand>(p); };
      r.add(s);
    }
    {
      StageSchema s{"test_jitter", "v -> w = v*v after a random pause", "test", Kind::Sample, Kind::Sample};
      s.requires_keys = {"v"};
      s.produces_keys = {"w"};
      s.params = {p_int("max_us", 200, "longest pause", 0)};
      s.factory = [](const Params& p) { return std::make_unique<Jitter>(p); };
      r.add(s);
    }
    for (auto kind : {Kind::Sample, Kind::Batch}) {
      StageSchema s{kind == Kind::Sample ? "test_sink" : "test_batch_sink", "records values", "test", kind, Kind::None};
      s.serial_only = true;
      s.params = {p_int("sleep_us", 0, "pause per item", 0), p_string("key", "w", "tensor to record")};
      if (kind == Kind::Sample)
        s.factory = [](const Params& p) { return std::make_unique<CountingSink>(p); };
      else
        s.factory = [](const Params& p) { return std::make_unique<RecordSink>(p); };
      r.add(s);
    }
  });
}

}  // namespace sl::test
