#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <random>
#include <set>

#include <rapidjson/document.h>
#include <unistd.h>

#include "graph/atomic_file.h"
#include "graph/engine.h"
#include "graph/spec.h"
#include "tests/graph/test_stages.h"

namespace sl {
namespace {

std::string chain(int n, int k, const std::string& mid_threads, int64_t in_flight, const std::string& extra = "",
                  const std::string& sink = R"({"id":"sink","type":"test_sink"})", int epochs = 1) {
  return R"({"name":"t","seed":7,"epochs":)" + std::to_string(epochs) + R"(,"in_flight":)" + std::to_string(in_flight) +
         R"(,"stages":[{"id":"src","type":"test_source","params":{"n":)" + std::to_string(n) +
         R"(}},{"id":"expand","type":"test_expand","threads":)" + mid_threads + R"(,"params":{"k":)" + std::to_string(k) +
         extra + R"(}},{"id":"jitter","type":"test_jitter","threads":)" + mid_threads + R"(},)" + sink + "]}";
}

RunResult run_text(const std::string& text, int threads, std::atomic<bool>* cancel = nullptr) {
  test::register_test_stages();
  test::probe().reset();
  PipelineSpec spec = parse_pipeline(text, "test.json");
  RunOptions opt;
  opt.threads = threads;
  opt.quiet = true;
  opt.cancel = cancel;
  return run_pipeline(spec, opt);
}

TEST(Engine, OutputIsIdenticalAt1And2And8Threads) {
  std::vector<std::vector<float>> outs;
  for (int t : {1, 2, 8}) {
    auto r = run_text(chain(40, 5, std::to_string(t), 6, "", R"({"id":"sink","type":"test_sink"})", 2), t);
    ASSERT_TRUE(r.ok) << r.error;
    outs.push_back(test::probe().values);
  }
  ASSERT_EQ(outs[0].size(), 40u * 5u * 2u);
  EXPECT_EQ(outs[0], outs[1]);
  EXPECT_EQ(outs[0], outs[2]);
  // The values are the seeded ones, not zeros, and differ between epochs (reshuffled seeds).
  std::set<float> distinct(outs[0].begin(), outs[0].end());
  EXPECT_EQ(distinct.size(), outs[0].size());
}

TEST(Engine, InFlightSourceItemsReachButNeverExceedTheBoundWithASlowSink) {
  // A slow sink: the source runs ahead until the limiter stops it, so the bound is reached --
  // and never passed (the source node may hold one more, made and waiting at the limiter).
  for (const int64_t bound : {1, 3, 5}) {
    auto r = run_text(chain(60, 2, "2", bound, "", R"({"id":"sink","type":"test_sink","params":{"sleep_us":300}})"), 2);
    ASSERT_TRUE(r.ok) << r.error;
    EXPECT_EQ(test::probe().values.size(), 120u);
    EXPECT_GE(test::probe().max_in_flight.load(), bound) << "in_flight " << bound;
    EXPECT_LE(test::probe().max_in_flight.load(), bound + 1) << "in_flight " << bound;
  }
}

TEST(Engine, BatchSlotsAreReusedAndNeverMoreThanThePool) {
  const std::string sink =
      R"({"id":"batch","type":"batch","params":{"size":4,"slots":2,"keys":["w"],"drop_last":false}},)"
      R"({"id":"sink","type":"test_batch_sink","params":{"sleep_us":500}})";
  auto r = run_text(chain(30, 3, "2", 4, "", sink), 2);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(test::probe().values.size(), 90u);  // 22 full batches + one of 2
  std::set<const void*> slots(test::probe().slots_seen.begin(), test::probe().slots_seen.end());
  EXPECT_LE(slots.size(), 2u);
  EXPECT_EQ(test::probe().slots_seen.size(), 23u);
}

TEST(Engine, BatchOutputMatchesUnbatchedOrderAndDropLastDropsTheRemainder) {
  auto plain = run_text(chain(10, 3, "2", 4), 2);
  ASSERT_TRUE(plain.ok);
  auto expected = test::probe().values;
  const std::string sink =
      R"({"id":"batch","type":"batch","params":{"size":4,"slots":3,"keys":["w"],"drop_last":true}},)"
      R"({"id":"sink","type":"test_batch_sink"})";
  auto r = run_text(chain(10, 3, "2", 4, "", sink), 2);
  ASSERT_TRUE(r.ok) << r.error;
  expected.resize(28);  // 30 samples, batches of 4, the last 2 dropped
  EXPECT_EQ(test::probe().values, expected);
}

TEST(Engine, SkipPolicyDropsTheBadItemCountsItAndSaysWhy) {
  std::string text = chain(8, 2, "2", 4, R"(,"fail_on":3)");
  text.replace(text.find(R"("type":"test_expand")"), 20, R"("type":"test_expand","on_error":"skip")");
  auto r = run_text(text, 2);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(test::probe().values.size(), 14u);
  ASSERT_EQ(r.skips.size(), 1u);
  EXPECT_EQ(r.skips[0].stage, "expand");
  EXPECT_EQ(r.skips[0].item, "mem://item3");
  EXPECT_NE(r.skips[0].reason.find("broken on purpose"), std::string::npos);
  EXPECT_EQ(r.stages[1].skipped, 1);
  EXPECT_NE(format_report(r).find("Skipped 1 item"), std::string::npos);
}

TEST(Engine, FailPolicyStopsTheRunWithTheStageAndReason) {
  auto r = run_text(chain(50, 2, "2", 4, R"(,"fail_on":3)"), 2);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.exit_code(), 1);
  EXPECT_NE(r.error.find("stage 'expand'"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("mem://item3: broken on purpose"), std::string::npos) << r.error;
  EXPECT_LT(test::probe().values.size(), 100u);
  EXPECT_TRUE(test::probe().finished);  // the sink still finished cleanly
}

TEST(Engine, CancellationStopsTheSourceDrainsAndFinishesTheSink) {
  std::atomic<bool> cancel{false};
  test::register_test_stages();
  test::probe().reset();
  PipelineSpec spec = parse_pipeline(chain(1000, 2, "2", 4, "", R"({"id":"sink","type":"test_sink","params":{"sleep_us":100}})"), "t.json");
  test::probe().cancel_flag = &cancel;
  test::probe().cancel_after = 20;
  RunOptions opt;
  opt.threads = 2;
  opt.cancel = &cancel;
  auto r = run_pipeline(spec, opt);
  EXPECT_TRUE(r.interrupted);
  EXPECT_EQ(r.exit_code(), 130);
  EXPECT_TRUE(test::probe().finished);
  EXPECT_GE(test::probe().values.size(), 20u);
  EXPECT_LT(test::probe().values.size(), 2000u);
  // Everything that left the source was drained through: whole items only (k = 2 per item).
  EXPECT_EQ(test::probe().values.size() % 2, 0u);
}

TEST(Engine, EpochMarkersReachTheSinkInOrder) {
  auto r = run_text(chain(5, 1, "2", 2, "", R"({"id":"sink","type":"test_sink"})", 3), 2);
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(test::probe().markers, (std::vector<int64_t>{0, 1, 2}));
}

TEST(Engine, ReportNamesEveryStageAndABottleneck) {
  auto r = run_text(chain(20, 2, "1", 4, "", R"({"id":"sink","type":"test_sink"})"), 2);
  ASSERT_TRUE(r.ok);
  ASSERT_EQ(r.stages.size(), 4u);
  EXPECT_EQ(r.stages[0].items_out, 20);
  EXPECT_EQ(r.stages[1].items_in, 20);
  EXPECT_EQ(r.stages[1].items_out, 40);
  EXPECT_EQ(r.stages[3].items_in, 40);
  // The sentence is the diagnosis of this run's own figures, and the report prints it.
  EXPECT_EQ(r.bottleneck, diagnose(r.stages, r.wall_s, 2));
  ASSERT_FALSE(r.bottleneck.empty());
  std::string rep = format_report(r);
  for (auto id : {"src", "expand", "jitter", "sink"}) EXPECT_NE(rep.find(id), std::string::npos);
  EXPECT_NE(rep.find("Bottleneck: " + r.bottleneck), std::string::npos) << rep;
}

// Real runs that land in two of the diagnosis branches: sleeping counts as busy time, so these
// hold on a loaded machine too.
TEST(Engine, BottleneckOfARunWithASlowSinkIsTheSink) {
  auto r = run_text(chain(30, 2, "2", 4, "", R"({"id":"sink","type":"test_sink","params":{"sleep_us":3000}})"), 2);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_GE(r.stages.back().utilization, 0.8);
  EXPECT_EQ(r.bottleneck.rfind("'sink' (the sink) is busy", 0), 0u) << r.bottleneck;
}

TEST(Engine, BottleneckOfARunWithASlowSingleThreadStageNamesItAndSuggestsThreads) {
  // jitter on 1 thread sleeps up to 6 ms per item (3 ms on average) while the sink does nothing.
  const std::string text =
      R"({"name":"t","seed":7,"in_flight":8,"stages":[{"id":"src","type":"test_source","params":{"n":40}},)"
      R"({"id":"expand","type":"test_expand","threads":2,"params":{"k":1}},)"
      R"({"id":"jitter","type":"test_jitter","threads":1,"params":{"max_us":6000}},{"id":"sink","type":"test_sink"}]})";
  auto r = run_text(text, 2);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_GE(r.stages[2].utilization, 0.7);
  EXPECT_NE(r.bottleneck.find("'jitter' is busy"), std::string::npos) << r.bottleneck;
  EXPECT_NE(r.bottleneck.find("with 1 thread: give 'jitter' more threads (\"threads\": 2 or \"auto\")"),
            std::string::npos)
      << r.bottleneck;
}

TEST(Engine, DiagnoseNamesTheSaturatedStageAndSuggestsThreads) {
  std::vector<StageReport> st(4);
  st[0].id = "scan";
  st[1].id = "read"; st[1].threads = 1; st[1].utilization = 0.3;
  st[2].id = "crop"; st[2].threads = 2; st[2].utilization = 0.98;
  st[3].id = "train"; st[3].busy_s = 2.9; st[3].utilization = 0.29;
  std::string d = diagnose(st, 10.0, 8);
  EXPECT_NE(d.find("'train' waited 71%"), std::string::npos) << d;
  EXPECT_NE(d.find("'crop' is busy 98% with 2 threads"), std::string::npos) << d;
  EXPECT_NE(d.find("give 'crop' more threads"), std::string::npos) << d;
}

namespace {

// Random stage figures: a source, 1-4 middle stages, a sink; utilizations in [0, 1).
std::vector<StageReport> random_stages(std::mt19937& rng, double wall) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<StageReport> st(2 + rng() % 5);
  for (size_t i = 0; i < st.size(); ++i) {
    st[i].id = "s" + std::to_string(i);
    st[i].threads = 1 + int(rng() % 8);
    st[i].utilization = u(rng);
    st[i].busy_s = st[i].utilization * wall * st[i].threads;
  }
  st.front().wait_output_s = u(rng) * wall;
  return st;
}

std::string pct(double share) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f%%", 100 * share);
  return buf;
}

}  // namespace

// Each branch of diagnose() over random figures, against the rules it documents: the sink busy
// >= 80% (or no middle stage) -> sink-bound; else the busiest middle stage >= 70% -> the sink
// starved by it, with "more threads" advice below all threads and "already uses all" at them;
// else no stage saturated, with the source's held-back share.
TEST(Engine, DiagnoseBranchesOverRandomStageFiguresSinkStarvedAllThreadsUnsaturated) {
  std::mt19937 rng(2024);
  int seen[4] = {0, 0, 0, 0};
  for (int round = 0; round < 2000; ++round) {
    const double wall = 0.5 + 10.0 * (rng() % 1000) / 1000.0;
    const int total = 1 + int(rng() % 8);
    auto st = random_stages(rng, wall);
    if (round % 3 == 0) st.back().utilization = 0.1 * (rng() % 8), st.back().busy_s = st.back().utilization * wall;
    const std::string d = diagnose(st, wall, total);
    const StageReport& sink = st.back();
    const StageReport* busiest = nullptr;
    for (size_t i = 1; i + 1 < st.size(); ++i)
      if (!busiest || st[i].utilization > busiest->utilization) busiest = &st[i];
    if (sink.utilization >= 0.8 || !busiest) {
      ++seen[0];
      EXPECT_EQ(d, "'" + sink.id + "' (the sink) is busy " + pct(sink.utilization) +
                       " of the run: the data path keeps up, the sink's own work is the limit.");
    } else if (busiest->utilization >= 0.7) {
      const std::string head = "'" + sink.id + "' waited " + pct(1.0 - std::min(1.0, sink.busy_s / wall)) +
                               " of the run for data; '" + busiest->id + "' is busy " + pct(busiest->utilization) +
                               " with " + std::to_string(busiest->threads) + (busiest->threads == 1 ? " thread" : " threads");
      EXPECT_EQ(d.rfind(head, 0), 0u) << d << "\nexpected to start with: " << head;
      if (busiest->threads < total) {
        ++seen[1];
        EXPECT_NE(d.find("give '" + busiest->id + "' more threads (\"threads\": " +
                         std::to_string(std::min(total, 2 * busiest->threads)) + " or \"auto\")"),
                  std::string::npos)
            << d;
      } else {
        ++seen[2];
        EXPECT_NE(d.find("'" + busiest->id + "' already uses all " + std::to_string(total) + " worker threads"),
                  std::string::npos)
            << d;
      }
    } else {
      ++seen[3];
      EXPECT_EQ(d.rfind("no stage is saturated (busiest: '" + busiest->id + "' at " + pct(busiest->utilization) +
                            ", sink '" + sink.id + "' at " + pct(sink.utilization) + "); the source was held back " +
                            pct(std::min(1.0, st.front().wait_output_s / wall)) + " of the run",
                        0),
                0u)
          << d;
    }
  }
  for (int b = 0; b < 4; ++b) EXPECT_GE(seen[b], 50) << "branch " << b << " hardly swept";
  // No figures to judge: no sentence.
  EXPECT_EQ(diagnose({StageReport{}}, 1.0, 2), "");
  EXPECT_EQ(diagnose(random_stages(rng, 1.0), 0.0, 2), "");
}

}  // namespace
}  // namespace sl

namespace sl {
namespace {

TEST(Engine, TraceFileHoldsASpanPerStageExecutionAndIsValidJson) {
  test::register_test_stages();
  test::probe().reset();
  PipelineSpec spec = parse_pipeline(chain(6, 2, "2", 4), "t.json");
  RunOptions opt;
  opt.threads = 2;
  opt.trace_path = (std::filesystem::temp_directory_path() / ("sl_trace_" + std::to_string(::getpid()) + ".json")).string();
  auto r = run_pipeline(spec, opt);
  ASSERT_TRUE(r.ok) << r.error;
  rapidjson::Document d;
  d.Parse(read_file(opt.trace_path).c_str());
  ASSERT_FALSE(d.HasParseError());
  std::map<std::string, int> spans;
  for (const auto& e : d["traceEvents"].GetArray())
    if (std::string(e["ph"].GetString()) == "X") {
      spans[e["name"].GetString()]++;
      EXPECT_GE(e["dur"].GetDouble(), 0.0);
    }
  // The source runs once per item plus the epoch-end and end-of-stream markers; every other
  // stage once per envelope (6 items + 2 markers).
  EXPECT_GE(spans["src"], 8);
  EXPECT_EQ(spans["expand"], 8);
  EXPECT_EQ(spans["jitter"], 8);
  EXPECT_EQ(spans["sink"], 8);
  std::filesystem::remove(opt.trace_path);
}

TEST(Spec, DotAndResolvedPipelineRoundTrip) {
  test::register_test_stages();
  PipelineSpec s = parse_pipeline(chain(4, 2, "2", 3), "t.json");
  const std::string dot = to_dot(s);
  EXPECT_NE(dot.find("\"src\" -> \"expand\" [label=\"SceneRef\"]"), std::string::npos) << dot;
  EXPECT_NE(dot.find("\"jitter\" -> \"sink\" [label=\"Sample\"]"), std::string::npos) << dot;
  // The resolved pipeline is itself a valid pipeline that resolves to the same text.
  PipelineSpec again = parse_pipeline(s.resolved_json(true), "resolved.json");
  EXPECT_EQ(again.resolved_json(false), s.resolved_json(false));
}

}  // namespace
}  // namespace sl
