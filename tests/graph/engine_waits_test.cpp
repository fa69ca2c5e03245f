// The run table's waiting figures and the process's CPU use (graph/engine.h: StageReport's
// order_wait_s, wait_output_s, fork_s / fork_tail_s / piece_s; CpuUse), on real runs whose
// stages sleep (the CPU idles, the clock runs) or spin (the CPU works), with a control run for
// each figure in which it must be small or exactly zero. Sleeps only ever lengthen on a loaded
// machine, so the lower bounds hold there; the upper bounds leave room for a busy 2-core VM.
#include <gtest/gtest.h>

#include <time.h>

#include <chrono>
#include <thread>

#include "graph/engine.h"
#include "graph/spec.h"
#include "tests/graph/test_stages.h"

namespace sl {
namespace {

double thread_cpu_s() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

// Sample -> Sample (v -> w): each sample costs `us` microseconds, slept ("sleep") or spent on
// this thread's CPU ("spin": until its CPU clock advanced by that much, so a loaded machine
// stretches the wall time, never lowers the CPU time spent); the sample of line `slow_line`
// costs `slow_us` instead.
class Work : public Stage {
 public:
  explicit Work(const Params& p)
      : us_(p.get_int("us")), slow_us_(p.get_int("slow_us")), slow_line_(p.get_int("slow_line")),
        spin_(p.get_string("mode") == "spin") {}
  void process(Item in, const Position&, Emitter& out, RunContext&) override {
    auto s = std::get<std::shared_ptr<Sample>>(in);
    const int64_t us = s->line_index == slow_line_ ? slow_us_ : us_;
    if (spin_) {
      const double until = thread_cpu_s() + 1e-6 * (double)us;
      volatile double x = 1;
      while (thread_cpu_s() < until)
        for (int i = 0; i < 5000; ++i) x = x * 1.0000001 + 1e-9;  // few clock reads: they are syscalls
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(us));
    }
    Tensor w({1});
    w.data[0] = s->at("v").data[0];
    s->tensors["w"] = w;
    out.emit(s);
  }

 private:
  int64_t us_, slow_us_, slow_line_;
  bool spin_;
};

void register_work_stage() {
  static std::once_flag once;
  std::call_once(once, [] {
    test::register_test_stages();
    StageSchema s{"test_work", "v -> w after sleeping or spinning us microseconds", "test", Kind::Sample, Kind::Sample};
    s.requires_keys = {"v"};
    s.produces_keys = {"w"};
    s.params = {p_int("us", 1000, "cost of a sample", 0), p_int("slow_us", 0, "cost of the slow line's sample", 0),
                p_int("slow_line", -1, "line index of the slow sample (-1: none)"),
                p_string("mode", "sleep", "sleep or spin")};
    s.factory = [](const Params& p) { return std::make_unique<Work>(p); };
    StageRegistry::instance().add(s);
  });
}

// src (n items) -> expand (k samples each) -> work -> sink; `work` is the work stage's params.
RunResult run_chain(int n, int k, int threads, int64_t in_flight, const std::string& work, int sink_sleep_us = 0) {
  register_work_stage();
  test::probe().reset();
  const std::string t = std::to_string(threads);
  const std::string text =
      R"({"name":"t","seed":7,"in_flight":)" + std::to_string(in_flight) +
      R"(,"stages":[{"id":"src","type":"test_source","params":{"n":)" + std::to_string(n) +
      R"(}},{"id":"expand","type":"test_expand","threads":)" + t + R"(,"params":{"k":)" + std::to_string(k) +
      R"(}},{"id":"work","type":"test_work","threads":)" + t + R"(,"params":)" + work +
      R"(},{"id":"sink","type":"test_sink","params":{"sleep_us":)" + std::to_string(sink_sleep_us) + "}}]}";
  PipelineSpec spec = parse_pipeline(text, "test.json");
  RunOptions opt;
  opt.threads = threads;
  opt.quiet = true;
  RunResult r = run_pipeline(spec, opt);
  EXPECT_TRUE(r.ok) << r.error;
  EXPECT_EQ(test::probe().values.size(), (size_t)(n * k));
  return r;
}

TEST(EngineWaits, CpuUseIsHighWhenEveryThreadSpinsAndLowWhenTheStageSleeps) {
  // 20 scenes x 8 samples x 2 ms: 0.32 s of work, as a fork-join of 8 pieces on 2 threads.
  const RunResult spin = run_chain(20, 8, 2, 4, R"({"us":2000,"mode":"spin"})");
  const RunResult nap = run_chain(20, 8, 2, 4, R"({"us":2000,"mode":"sleep"})");
  for (const RunResult* r : {&spin, &nap}) {
    EXPECT_GE(r->cpu.affinity_cpus, 1);
    EXPECT_EQ(r->cpu.cores, std::min(2, r->cpu.affinity_cpus)) << "the fewer of the run's threads and the CPUs";
    EXPECT_DOUBLE_EQ(r->cpu.core_s, r->wall_s * r->cpu.cores);
    // Start-up ends when the first sample reached the sink: after one fork-join (>= 4 ms of
    // sleeping or spinning), before the run's end.
    EXPECT_GT(r->cpu.startup_s, 0.004);
    EXPECT_LT(r->cpu.startup_s, r->wall_s);
    EXPECT_DOUBLE_EQ(r->cpu.startup_core_s, r->cpu.startup_s * r->cpu.cores);
  }
  // The spinning stage's CPU time is in the process's, whatever the load.
  EXPECT_GE(spin.cpu.user_s + spin.cpu.system_s, 0.95 * 0.32);
  // Alone on the machine spinning would give nearly 100%; sleeping gives 1-3%. Other processes take their share of the two
  // cores from the spinning run alone (at a load of 5.7 it measured 33%, its fair share), so
  // the bound for "high" is 25%: counting one thread's CPU, or wall time, would still fail it.
  EXPECT_GE(spin.cpu.use(), 0.25) << format_report(spin);
  EXPECT_LE(nap.cpu.use(), 0.1) << format_report(nap);
  EXPECT_GE(spin.cpu.steady_use(), 0.25) << format_report(spin);
  EXPECT_LE(nap.cpu.steady_use(), 0.1) << format_report(nap);
  const std::string text = format_report(spin);
  EXPECT_NE(text.find("  CPU: "), std::string::npos) << text;
  EXPECT_NE(text.find("start-up (until the first item reached 'sink': "), std::string::npos) << text;
}

TEST(EngineWaits, ItemsFinishingOutOfOrderBeforeASerialStageWaitInOrderAndInOrderOnesNever) {
  // One sample per scene, slept 0-6 ms at random (test_jitter), two scenes at a time: a scene
  // often finishes before the one ahead of it and waits for it in the sink's sequencer.
  auto text = [](const std::string& threads) {
    return R"({"name":"t","seed":7,"in_flight":6,"stages":[{"id":"src","type":"test_source","params":{"n":40}},)"
           R"({"id":"expand","type":"test_expand","threads":)" + threads + R"(,"params":{"k":1}},)"
           R"({"id":"jitter","type":"test_jitter","threads":)" + threads + R"(,"params":{"max_us":6000}},)"
           R"({"id":"sink","type":"test_sink"}]})";
  };
  auto run = [](const std::string& t, int threads) {
    test::register_test_stages();
    test::probe().reset();
    RunOptions opt;
    opt.threads = threads;
    opt.quiet = true;
    RunResult r = run_pipeline(parse_pipeline(t, "t.json"), opt);
    EXPECT_TRUE(r.ok) << r.error;
    return r;
  };
  const RunResult par = run(text("2"), 2);
  EXPECT_GT(par.stages[3].order_wait_s, 0.005) << format_report(par);
  EXPECT_LT(par.stages[3].order_wait_s, 40 * 0.006 * 4) << "at most a few scenes' sleeps each";
  EXPECT_EQ(par.stages[1].order_wait_s, 0) << "not a serial stage";
  // One thread everywhere: every scene arrives in order, so none waits, exactly.
  const RunResult one = run(text("1"), 1);
  EXPECT_EQ(one.stages[3].order_wait_s, 0) << format_report(one);
  const std::string rep = format_report(par);
  EXPECT_NE(rep.find("held s  order s tail %\n"), std::string::npos) << rep;
}

TEST(EngineWaits, TheSourceIsHeldBackByInFlightOneBehindASlowSinkAndNotWithRoomForEveryItem) {
  // 30 scenes, one sample each, a sink that takes 3 ms: with in_flight 1 the source waits for
  // each scene to leave the sink before it makes the next (~90 ms); with room for all of them
  // (30 scenes + 2 markers) it never does.
  const RunResult one = run_chain(30, 1, 2, 1, R"({"us":0})", 3000);
  const RunResult room = run_chain(30, 1, 2, 64, R"({"us":0})", 3000);
  EXPECT_GE(one.stages[0].wait_output_s, 0.5 * 30 * 0.003) << format_report(one);
  EXPECT_LE(room.stages[0].wait_output_s, 0.2 * 30 * 0.003) << format_report(room);
}

TEST(EngineWaits, AFewSlowPiecesMakeALongForkJoinTailAndEvenOnesAShortOne) {
  // 10 scenes x 16 samples on 2 threads, one scene at a time (in_flight 1: with two, each
  // thread would sit in its own scene's slow piece and the other pieces would wait for a thread,
  // not for the join). Even: 2 ms each, so the last piece starts about 2 ms before the end of a
  // 16 ms fork-join (~12%). Uneven: line 0 takes 60 ms and the other 15 take 0.5 ms: every
  // chunk of pieces has been handed out long before the slow one ends (~85%; the pieces that
  // share the slow one's chunk wait behind it on its thread, and count as tail).
  const RunResult even = run_chain(10, 16, 2, 1, R"({"us":2000})");
  const RunResult slow = run_chain(10, 16, 2, 1, R"({"us":500,"slow_us":60000,"slow_line":0})");
  for (const RunResult* r : {&even, &slow}) {
    const StageReport& w = r->stages[2];
    EXPECT_GT(w.fork_s, 0);
    EXPECT_LE(w.fork_tail_s, w.fork_s);
    EXPECT_LE(w.fork_s, w.busy_s) << "a fork-join is inside its stage's busy time";
  }
  // Every piece sleeps at least its time, and on its own thread.
  EXPECT_GE(even.stages[2].piece_s, 10 * 16 * 0.002);
  EXPECT_GE(slow.stages[2].piece_s, 10 * (0.060 + 15 * 0.0005));
  EXPECT_LE(even.stages[2].tail_share(), 0.35) << format_report(even);
  EXPECT_GE(slow.stages[2].tail_share(), 0.6) << format_report(slow);
  // On one thread nothing is forked.
  const RunResult one = run_chain(4, 4, 1, 2, R"({"us":100})");
  EXPECT_EQ(one.stages[2].fork_s, 0);
  EXPECT_EQ(one.stages[2].piece_s, 0);
  EXPECT_NE(format_report(slow).find("tail %: the share of a parallel stage's fork-join"), std::string::npos);
}

}  // namespace
}  // namespace sl
