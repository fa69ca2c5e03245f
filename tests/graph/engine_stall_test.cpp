// A run never "succeeds" on part of its data: a bad sample at the batch stage is skipped (or
// fails the run) and the queue moves past it; a stage that holds items it never passes on is
// reported as a stall instead of a silent exit 0; fan-out is refused at validation.
#include <gtest/gtest.h>

#include "graph/engine.h"
#include "graph/spec.h"
#include "tests/graph/test_stages.h"

namespace sl {
namespace {

// Sample -> Sample; the samples of source item `bad` get a "w" of another shape.
class Misfit : public Stage {
 public:
  explicit Misfit(const Params& p) : bad_(p.get_int("bad")) {}
  void process(Item in, const Position&, Emitter& out, RunContext&) override {
    auto s = std::get<std::shared_ptr<Sample>>(in);
    if (s->scene_index == bad_) {
      Tensor w({2});
      w.data[0] = w.data[1] = 1.5f;
      s->tensors["w"] = w;
    }
    out.emit(s);
  }

 private:
  int64_t bad_;
};

// Serial, holds every source item and never releases or passes anything on (a broken stage).
class Hoard : public Stage {
 public:
  explicit Hoard(const Params&) {}
  bool defers_release() const override { return true; }
  void process_all(const Envelope& in, Emitter&, RunContext&) override {
    for (const auto& it : in.items) held_.push_back(it);
  }

 private:
  std::vector<Item> held_;
};

// Serial, passes data through but swallows the end-of-stream marker.
class Swallow : public Stage {
 public:
  explicit Swallow(const Params&) {}
  void process(Item in, const Position&, Emitter& out, RunContext&) override { out.emit(std::move(in)); }
  void on_marker(const Envelope& m, Emitter& out, RunContext&) override {
    if (m.type != Envelope::Type::EndOfStream) out.emit_marker(m.type, m.pos);
  }
};

void register_stall_stages() {
  static std::once_flag once;
  std::call_once(once, [] {
    test::register_test_stages();
    auto& r = StageRegistry::instance();
    {
      StageSchema s{"test_misfit", "gives one item's samples a wrongly shaped w", "test", Kind::Sample, Kind::Sample};
      s.params = {p_int("bad", -1, "source item whose samples misfit")};
      s.factory = [](const Params& p) { return std::make_unique<Misfit>(p); };
      r.add(s);
    }
    {
      StageSchema s{"test_hoard", "holds items forever", "test", Kind::Sample, Kind::Sample};
      s.serial_only = true;
      s.factory = [](const Params& p) { return std::make_unique<Hoard>(p); };
      r.add(s);
    }
    {
      StageSchema s{"test_swallow", "drops the end-of-stream marker", "test", Kind::Sample, Kind::Sample};
      s.serial_only = true;
      s.factory = [](const Params& p) { return std::make_unique<Swallow>(p); };
      r.add(s);
    }
  });
}

RunResult run_stages(const std::string& stages, int threads = 2, int64_t in_flight = 3) {
  register_stall_stages();
  test::probe().reset();
  const std::string text = R"({"name":"t","seed":7,"epochs":1,"in_flight":)" + std::to_string(in_flight) +
                           R"(,"stages":[{"id":"src","type":"test_source","params":{"n":12}},)"
                           R"({"id":"expand","type":"test_expand","params":{"k":3}},)"
                           R"({"id":"jitter","type":"test_jitter","threads":2,"params":{"max_us":50}},)" +
                           stages + "]}";
  PipelineSpec spec = parse_pipeline(text, "test.json");
  RunOptions opt;
  opt.threads = threads;
  opt.quiet = true;
  return run_pipeline(spec, opt);
}

const char* kBatchSink =
    R"({"id":"batch","type":"batch","on_error":"%s","params":{"size":4,"slots":2,"keys":["w"],"drop_last":false}},)"
    R"({"id":"sink","type":"test_batch_sink","params":{"key":"w"}})";

std::string batch_sink(const char* policy) {
  char buf[512];
  std::snprintf(buf, sizeof buf, kBatchSink, policy);
  return buf;
}

TEST(EngineStall, BatchSkipsAMisfitSampleAndTrainsEverySampleAfterIt) {
  const auto plain = run_stages(batch_sink("fail"));
  ASSERT_TRUE(plain.ok) << plain.error;
  auto expected = test::probe().values;
  ASSERT_EQ(expected.size(), 36u);
  // Item 4's three samples misfit: all three are skipped one by one, the run goes on to the end.
  const auto r = run_stages(R"({"id":"misfit","type":"test_misfit","params":{"bad":4}},)" + batch_sink("skip"));
  ASSERT_TRUE(r.ok) << r.error;
  expected.erase(expected.begin() + 12, expected.begin() + 15);
  EXPECT_EQ(test::probe().values, expected);
  ASSERT_EQ(r.skips.size(), 3u);
  for (const auto& s : r.skips) {
    EXPECT_EQ(s.stage, "batch");
    EXPECT_NE(s.item.find("scene #4"), std::string::npos) << s.item;
    EXPECT_NE(s.reason.find("tensor 'w' has shape [2]"), std::string::npos) << s.reason;
  }
  EXPECT_EQ(r.stages[4].skipped, 3);
}

TEST(EngineStall, BatchFailPolicyStopsTheRunOnAMisfitSampleNamingIt) {
  const auto r = run_stages(R"({"id":"misfit","type":"test_misfit","params":{"bad":4}},)" + batch_sink("fail"));
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.exit_code(), 1);
  EXPECT_NE(r.error.find("stage 'batch'"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("scene #4"), std::string::npos) << r.error;
  EXPECT_LT(test::probe().values.size(), 36u);
  EXPECT_TRUE(test::probe().finished);
}

TEST(EngineStall, AStageThatNeverReleasesItsItemsFailsTheRunAtOneAndTwoThreads) {
  for (int threads : {1, 2}) {
    const auto r = run_stages(R"({"id":"hoard","type":"test_hoard"},{"id":"sink","type":"test_sink"})", threads);
    EXPECT_FALSE(r.ok) << threads;
    EXPECT_EQ(r.exit_code(), 1);
    EXPECT_NE(r.error.find("stage 'engine'"), std::string::npos) << r.error;
    EXPECT_NE(r.error.find("the source 'src' was held back after 4 item(s) of epoch 0: the source items in flight (in_flight 3)"), std::string::npos) << r.error;
    // in_flight items passed the limiter; the source made one more, which waits at it.
    EXPECT_EQ(test::probe().made.load(), 4);
    EXPECT_TRUE(test::probe().values.empty());
  }
}

TEST(EngineStall, AStageThatSwallowsTheEndOfTheDataIsNamed) {
  const auto r = run_stages(R"({"id":"swallow","type":"test_swallow"},{"id":"sink","type":"test_sink"})");
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("never reached 'sink'; stage 'swallow' received it"), std::string::npos) << r.error;
  EXPECT_EQ(test::probe().values.size(), 36u);  // the data itself all arrived
}

TEST(EngineStall, ValidationRefusesAStageFeedingTwoStages) {
  register_stall_stages();
  const std::string text =
      R"({"name":"t","stages":[{"id":"src","type":"test_source"},{"id":"expand","type":"test_expand"},)"
      R"({"id":"a","type":"test_sink","inputs":"expand"},{"id":"b","type":"test_sink","inputs":"expand"}]})";
  try {
    parse_pipeline(text, "fan.json");
    FAIL() << "fan-out accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("fan.json: /stages/1: stage 'expand' feeds 2 stages ('a', 'b')"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace sl
