#include "graph/engine.h"

#include <sched.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <mutex>
#include <sstream>

#include <tbb/flow_graph.h>
#include <tbb/global_control.h>
#include <tbb/task_arena.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include "graph/error.h"
#include "graph/trace.h"

namespace sl {

void Stage::process(Item, const Position&, Emitter&, RunContext&) {
  throw Error("stage '" + id + "' takes whole envelopes (process_all), not single items");
}

void RunContext::add_summary(const std::string& line) {
  std::lock_guard<std::mutex> lock(mu_);
  summary_.push_back(line);
}
std::vector<std::string> RunContext::summaries() const {
  std::lock_guard<std::mutex> lock(mu_);
  return summary_;
}
void RunContext::add_summary(const std::string& key, const std::map<std::string, double>& figures, FigureText text) {
  const std::string line = text(figures, 1);
  std::lock_guard<std::mutex> lock(mu_);
  figure_lines_.push_back(FigureLine{summary_.size(), key, figures, std::move(text)});
  summary_.push_back(line);
}
std::vector<RunContext::FigureLine> RunContext::figure_lines() const {
  std::lock_guard<std::mutex> lock(mu_);
  return figure_lines_;
}
void RunContext::count(int64_t epoch, const std::string& name, int64_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  counts_[epoch][name] += n;
}
std::map<std::string, int64_t> RunContext::counts(int64_t epoch) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = counts_.find(epoch);
  return it == counts_.end() ? std::map<std::string, int64_t>{} : it->second;
}

namespace {

using namespace tbb::flow;
using StageNode = multifunction_node<Envelope, std::tuple<Envelope>>;

std::string describe_item(const Item& it) {
  switch (it.index()) {
    case 0: return std::get<0>(it)->cloud_path;
    case 1: return std::get<1>(it)->ref.cloud_path;
    case 2: return std::get<2>(it)->describe();
    default: return "batch";
  }
}

// A stage's counters, one cache line per thread: the per-item path never writes a line that
// another thread writes. (They were atomics shared by the stage's threads: every item of a
// parallel stage moved that line between cores.) Written only by the thread whose TBB index
// the slot has (a thread outside the arena's indices takes a locked spare), summed after the
// run, when the graph's wait has ordered every write before the read.
struct alignas(64) StageCounters {
  int64_t items_in = 0, items_out = 0, skipped = 0, busy_ns = 0, invocations = 0, gap_ns = 0;
  int64_t order_ns = 0, fork_ns = 0, tail_ns = 0, piece_ns = 0;  // StageReport says what each is
};
class ThreadCounters {
 public:
  ThreadCounters() : slots_((size_t)std::max(1, tbb::this_task_arena::max_concurrency()) + 1) {}
  // Calls f(StageCounters&) on this thread's slot.
  template <typename F>
  void add(F&& f) {
    const int i = tbb::this_task_arena::current_thread_index();
    if (i >= 0 && (size_t)i + 1 < slots_.size()) return f(slots_[(size_t)i]);
    std::lock_guard<std::mutex> lock(spare_mu_);
    f(slots_.back());
  }
  StageCounters total() const {
    StageCounters t;
    for (const auto& c : slots_) {
      t.items_in += c.items_in, t.items_out += c.items_out, t.skipped += c.skipped;
      t.busy_ns += c.busy_ns, t.invocations += c.invocations, t.gap_ns += c.gap_ns;
      t.order_ns += c.order_ns, t.fork_ns += c.fork_ns, t.tail_ns += c.tail_ns, t.piece_ns += c.piece_ns;
    }
    return t;
  }

 private:
  std::vector<StageCounters> slots_;
  std::mutex spare_mu_;
};

struct StageRuntime {
  const StageSpec* spec = nullptr;
  std::unique_ptr<Stage> stage;
  ThreadCounters counters;
  std::unique_ptr<StageNode> node;
  std::unique_ptr<sequencer_node<Envelope>> sequencer;
  bool serial = false;    // stateful: exactly one thread, fed in order, renumbers its outputs
  bool releases = false;  // source items are counted done here
  uint64_t out_seq = 0;   // next sequence number of a serial stage's outputs
  int64_t ready_max = 0;  // a serial stage: the latest ready_ns of the envelopes it has taken
  bool last = false;      // the last stage (the sink): its first data item ends the start-up
  std::atomic<bool> saw_end{false};  // the EndOfStream marker reached this stage
};

struct Run {
  const PipelineSpec* spec = nullptr;
  RunContext ctx;
  std::vector<std::unique_ptr<StageRuntime>> stages;
  std::atomic<bool> local_cancel{false};
  // Wakes (a slot returned, possibly on a consumer's thread) are posted only while this is true;
  // wake_mu makes "check and post" one step, so none is posted after the run stopped accepting.
  std::atomic<bool> accepting{true};
  std::mutex wake_mu;
  std::mutex mu;
  std::vector<SkipRecord> skips;
  std::string first_error;
  bool failed = false;
  std::unique_ptr<Trace> trace;
  limiter_node<Envelope>* limiter = nullptr;
  // The end of the start-up: when the first data item reached the last stage, and the process's
  // CPU time then (written once, by the thread that set the flag; read after the graph's wait).
  std::atomic<bool> reached_last{false};
  int64_t reached_last_ns = 0;
  double reached_last_cpu_s = 0;
  // The holds of the stages that keep the run open (Stage::holds_run_open): taken when the graph
  // exists, released by the stage, or by a failure. A hold released before it was taken is
  // never taken; once the graph is done waiting, every hold is released.
  struct Hold {
    std::mutex mu;
    graph* g = nullptr;
    bool released = false;
    void reserve(graph& gr) {
      std::lock_guard<std::mutex> lock(mu);
      if (released) return;
      g = &gr;
      gr.reserve_wait();
    }
    void release() {
      std::lock_guard<std::mutex> lock(mu);
      if (released) return;
      released = true;
      if (g) g->release_wait();
    }
  };
  std::vector<std::shared_ptr<Hold>> hold_states;
  std::vector<std::function<void()>> holds;

  void record_failure(const std::string& stage, const std::string& what) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (!failed) first_error = "stage '" + stage + "': " + what;
      failed = true;
    }
    local_cancel = true;
    for (auto& h : holds) h();  // a failed run ends even while a consumer holds batches
  }
  void record_skip(StageRuntime& rt, const std::string& item, const std::string& why) {
    rt.counters.add([](StageCounters& c) { ++c.skipped; });
    std::lock_guard<std::mutex> lock(mu);
    skips.push_back({rt.spec->id, item, why});
  }
  // Applies the stage's error policy to one failed item.
  void on_item_error(StageRuntime& rt, const Item* it, const std::string& why, bool is_sl_error) {
    if (is_sl_error && rt.spec->policy == ErrorPolicy::Skip) {
      record_skip(rt, it ? describe_item(*it) : "-", why);
    } else {
      record_failure(rt.spec->id, why);
    }
  }
  void release(int64_t n) {
    for (int64_t i = 0; i < n; ++i) limiter->decrementer().try_put(continue_msg());
  }
};

// Collects the outputs of one item (parallel stages).
class CollectEmitter : public Emitter {
 public:
  std::vector<Item> items;
  void emit(Item item) override { items.push_back(std::move(item)); }
  void emit_marker(Envelope::Type, Position) override {
    throw Error("only stages that run serially may emit markers");
  }
};

// Serial stages: every output becomes its own envelope with the stage's own sequence numbers.
class SerialEmitter : public Emitter {
 public:
  SerialEmitter(StageRuntime& rt, StageNode::output_ports_type& ports, Position pos)
      : rt_(rt), ports_(ports), pos_(pos) {}
  void emit(Item item) override {
    Envelope e;
    e.seq = rt_.out_seq++;
    e.pos = pos_;
    e.items.push_back(std::move(item));
    rt_.counters.add([](StageCounters& c) { ++c.items_out; });
    e.ready_ns = now_ns();
    std::get<0>(ports_).try_put(e);
  }
  void emit_marker(Envelope::Type type, Position pos) override {
    Envelope e;
    e.type = type;
    e.seq = rt_.out_seq++;
    e.pos = pos;
    e.ready_ns = now_ns();
    std::get<0>(ports_).try_put(e);
  }

 private:
  StageRuntime& rt_;
  StageNode::output_ports_type& ports_;
  Position pos_;
};

// The process's user + system CPU time so far, in seconds.
double process_cpu_s() {
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec + 1e-6 * (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

template <class F>
void guarded(Run& run, StageRuntime& rt, const Item* it, F&& f) {
  try {
    f();
  } catch (const Error& e) {
    run.on_item_error(rt, it, e.what(), true);
  } catch (const Interrupted&) {
    run.local_cancel = true;
  } catch (const std::exception& e) {
    run.on_item_error(rt, it, std::string("internal error: ") + e.what(), false);
  }
}

void stage_body(Run& run, StageRuntime& rt, const Envelope& in, StageNode::output_ports_type& ports) {
  const int64_t t0 = now_ns();
  Stage& st = *rt.stage;
  if (in.type == Envelope::Type::EndOfStream) rt.saw_end = true;
  if (rt.last && in.type == Envelope::Type::Data && !run.reached_last.load(std::memory_order_relaxed) &&
      !run.reached_last.exchange(true)) {
    run.reached_last_ns = t0;
    run.reached_last_cpu_s = process_cpu_s();
  }
  // Order: a serial stage takes envelopes in sequence, so when it takes one, every earlier one
  // has arrived; the envelope was held in the sequencer from its own arrival until the latest
  // of theirs. (Wakes do not pass the sequencer.)
  if (rt.serial && in.type != Envelope::Type::Wake && in.ready_ns > 0) {
    if (rt.ready_max > in.ready_ns) {
      const int64_t held = rt.ready_max - in.ready_ns;
      rt.counters.add([&](StageCounters& c) { c.order_ns += held; });
    } else {
      rt.ready_max = in.ready_ns;
    }
  }
  if (in.type == Envelope::Type::Wake) {
    SerialEmitter em(rt, ports, in.pos);
    guarded(run, rt, nullptr, [&] { st.on_wake(em, run.ctx); });
  } else if (rt.serial) {
    SerialEmitter em(rt, ports, in.pos);
    if (in.type == Envelope::Type::Data) {
      if (st.defers_release()) {
        rt.counters.add([&](StageCounters& c) { c.items_in += (int64_t)in.items.size(); });
        // The stage holds source items: an error here fails the run whatever the policy (a
        // skip would leave them held and the graph stalled); single bad outputs go by reject().
        try {
          st.process_all(in, em, run.ctx);
        } catch (const Interrupted&) {
          run.local_cancel = true;
        } catch (const std::exception& e) {
          run.record_failure(rt.spec->id, e.what());
        }
      } else {
        for (const Item& it : in.items) {
          rt.counters.add([](StageCounters& c) { ++c.items_in; });
          guarded(run, rt, &it, [&] { st.process(it, in.pos, em, run.ctx); });
        }
        if (rt.releases) run.release(1);
      }
    } else {
      guarded(run, rt, nullptr, [&] { st.on_marker(in, em, run.ctx); });
      if (rt.releases) run.release(1);
    }
  } else {
    Envelope out;
    out.type = in.type;
    out.seq = in.seq;
    out.pos = in.pos;
    if (in.type == Envelope::Type::Data) {
      const size_t n = in.items.size();
      rt.counters.add([&](StageCounters& c) { c.items_in += (int64_t)n; });
      std::vector<CollectEmitter> ems(n);
      auto one = [&](size_t i) {
        guarded(run, rt, &in.items[i], [&] { st.process(in.items[i], in.pos, ems[i], run.ctx); });
      };
      // Items of one envelope (the lines of a scene) spread over the stage's threads; outputs
      // are concatenated in item order, so the result does not depend on scheduling.
      if (rt.spec->threads > 1 && n > 1) {
        // The fork-join's figures: its wall time, the pieces' own time, and its tail: after the
        // last piece was taken by a thread, nothing was left for a thread that came free. One
        // task per piece (simple_partitioner, grain 1): a piece waits in a deque, free to be
        // taken by any thread, until it starts. (The default auto_partitioner hands out ranges
        // of pieces that run one after another on their thread: pieces behind a slow one waited
        // for it while the other threads idled, and "started" no longer meant "handed out".)
        const int64_t f0 = now_ns();
        std::atomic<int64_t> last_start{f0};
        auto piece = [&](size_t i) {
          const int64_t p0 = now_ns();
          int64_t seen = last_start.load(std::memory_order_relaxed);
          while (p0 > seen && !last_start.compare_exchange_weak(seen, p0, std::memory_order_relaxed)) {}
          one(i);
          const int64_t p = now_ns() - p0;
          rt.counters.add([&](StageCounters& c) { c.piece_ns += p; });
        };
        tbb::parallel_for(tbb::blocked_range<size_t>(0, n, 1),
                          [&](const tbb::blocked_range<size_t>& r) {
                            for (size_t i = r.begin(); i != r.end(); ++i) piece(i);
                          },
                          tbb::simple_partitioner());
        const int64_t f1 = now_ns(), tail = f1 - last_start.load(std::memory_order_relaxed);
        rt.counters.add([&](StageCounters& c) { c.fork_ns += f1 - f0, c.tail_ns += tail; });
      } else {
        for (size_t i = 0; i < n; ++i) one(i);
      }
      for (auto& em : ems)
        for (auto& it : em.items) out.items.push_back(std::move(it));
      rt.counters.add([&](StageCounters& c) { c.items_out += (int64_t)out.items.size(); });
    }
    out.ready_ns = now_ns();
    std::get<0>(ports).try_put(out);
    if (rt.releases) run.release(1);
  }
  const int64_t t1 = now_ns();
  rt.counters.add([&](StageCounters& c) { c.busy_ns += t1 - t0, ++c.invocations; });
  if (run.trace) run.trace->span(rt.spec->id, rt.spec->type, t0, t1);
}

// The stage objects in pipeline order, the chain's shape, and where source items are released.
struct Topology {
  int source = -1, sink = -1;
  std::vector<int> next;  // the one consumer of each stage (-1: the sink); validation refuses fan-out
  std::map<std::string, int> index_of;
};

Topology build_stages(Run& run, const PipelineSpec& spec) {
  Topology t;
  for (const auto& s : spec.stages) {
    auto rt = std::make_unique<StageRuntime>();
    rt->spec = &s;
    rt->stage = s.schema->factory(spec.params(s.index));
    rt->stage->id = s.id;
    rt->serial = s.schema->serial_only;
    if (rt->stage->holds_run_open()) {  // set before start(): the stage may hand it to another thread there
      auto h = std::make_shared<Run::Hold>();
      rt->stage->release_hold = [h] { h->release(); };
      run.hold_states.push_back(h);
      run.holds.push_back(rt->stage->release_hold);
    }
    t.index_of[s.id] = (int)run.stages.size();
    run.stages.push_back(std::move(rt));
  }
  t.next.assign(run.stages.size(), -1);
  for (size_t i = 0; i < spec.stages.size(); ++i) {
    if (spec.stages[i].inputs.empty()) t.source = (int)i;
    for (const auto& in : spec.stages[i].inputs) {
      int& n = t.next[t.index_of.at(in)];
      if (n >= 0) throw Error(spec.source_path + ": stage '" + in + "' feeds more than one stage (validate_graph refuses this)");
      n = (int)i;
    }
  }
  if (t.source < 0) throw Error(spec.source_path + ": no source stage");
  // The release point: the first stateful stage after the source, or the last stage.
  int cur = t.source, release = -1;
  while (t.next[cur] >= 0) {
    cur = t.next[cur];
    if (release < 0 && run.stages[cur]->serial) release = cur;
  }
  t.sink = cur;
  run.stages[t.sink]->last = true;
  run.stages[release >= 0 ? release : t.sink]->releases = true;
  return t;
}

// The source node's body: one envelope per call (a data item, an epoch end, the end).
struct SourceFeed {
  Run& run;
  StageRuntime& rt;
  SourceStage& stage;
  const RunOptions& opt;
  int64_t epoch, index, size = -1;
  uint64_t seq = 0;
  bool finished = false;
  int64_t last_return = 0;

  Envelope operator()(tbb::flow_control& fc) {
    const int64_t t0 = now_ns();
    if (last_return) rt.counters.add([&](StageCounters& c) { c.gap_ns += t0 - last_return; });
    Envelope e;
    e.seq = seq++;
    e.pos = {epoch, index};
    if (finished) {
      fc.stop();
      return e;
    }
    if (size < 0) size = stage.epoch_size();
    if (opt.cancel && opt.cancel->load()) run.local_cancel = true;
    if (run.ctx.cancelled() || epoch >= run.spec->epochs) {
      e.type = Envelope::Type::EndOfStream;
      finished = true;
    } else if (index < size) {
      guarded(run, rt, nullptr, [&] {
        rt.counters.add([](StageCounters& c) { ++c.items_in; });
        e.items.push_back(stage.make(epoch, index, run.ctx));
        rt.counters.add([](StageCounters& c) { ++c.items_out; });
      });
      ++index;
    } else {
      e.type = Envelope::Type::EpochEnd;
      ++epoch;
      index = 0;
      size = -1;
    }
    const int64_t t1 = now_ns();
    rt.counters.add([&](StageCounters& c) { c.busy_ns += t1 - t0, ++c.invocations; });
    last_return = t1;
    if (run.trace) run.trace->span(rt.spec->id, rt.spec->type, t0, t1);
    e.ready_ns = t1;
    return e;
  }
};

// Stage nodes, sequencers before serial stages, edges, and the callbacks stages use.
void wire(graph& g, Run& run, const Topology& t, limiter_node<Envelope>& limiter) {
  for (size_t i = 0; i < run.stages.size(); ++i) {
    if ((int)i == t.source) continue;
    auto& rt = *run.stages[i];
    const size_t conc = rt.serial ? 1 : (size_t)rt.spec->threads;
    rt.node = std::make_unique<StageNode>(
        g, conc, [&run, &rt](const Envelope& in, StageNode::output_ports_type& ports) { stage_body(run, rt, in, ports); });
    if (rt.serial)
      rt.sequencer = std::make_unique<sequencer_node<Envelope>>(g, [](const Envelope& e) { return (size_t)e.seq; });
    StageNode* node = rt.node.get();
    rt.stage->release_source_items = [&run](int64_t n) { run.release(n); };
    rt.stage->reject = [&run, &rt](const std::string& item, const std::string& why) {
      if (rt.spec->policy == ErrorPolicy::Skip) run.record_skip(rt, item, why);
      else run.record_failure(rt.spec->id, item + ": " + why);
    };
    rt.stage->wake = [&run, node] {
      std::lock_guard<std::mutex> lock(run.wake_mu);
      if (run.accepting) node->try_put(Envelope{Envelope::Type::Wake});
    };
  }
  for (size_t i = 0; i < run.stages.size(); ++i) {
    if ((int)i == t.source) continue;
    auto& rt = *run.stages[i];
    const int up = t.index_of.at(rt.spec->inputs[0]);
    receiver<Envelope>& to = rt.sequencer ? static_cast<receiver<Envelope>&>(*rt.sequencer) : *rt.node;
    if (up == t.source) make_edge(limiter, to);
    else make_edge(output_port<0>(*run.stages[up]->node), to);
    if (rt.sequencer) make_edge(*rt.sequencer, *rt.node);
  }
}

// A graph that went idle before the end of the data reached the sink, with nobody having
// stopped it, is a stall (a stage holding items it never passes on or releases): an error,
// never a successful run that trained on part of the data.
std::string stall_reason(const Run& run, const Topology& t, const SourceFeed& feed) {
  if (run.stages[t.sink]->saw_end) return "";
  if (!feed.finished)
    return "the run stalled: the source '" + run.stages[t.source]->spec->id + "' was held back after " +
           std::to_string(feed.index) + " item(s) of epoch " + std::to_string(feed.epoch) +
           ": the source items in flight (in_flight " + std::to_string(run.spec->in_flight) +
           ") were never released downstream, and the graph went idle";
  std::string last = run.stages[t.source]->spec->id;
  for (int i = t.next[t.source]; i >= 0 && run.stages[i]->saw_end; i = t.next[i]) last = run.stages[i]->spec->id;
  return "the run stalled: the end of the data never reached '" + run.stages[t.sink]->spec->id + "'; stage '" + last +
         "' received it but still holds items it never passed on, and the graph went idle";
}

// CPUs in the process's affinity mask (taskset, a container's cpuset); the hardware's when unknown.
int affinity_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1, tbb::this_task_arena::max_concurrency());
}

void fill_report(RunResult& result, const Run& run, const Topology& t, int total_threads) {
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  result.peak_rss_bytes = (double)ru.ru_maxrss * 1024.0;  // Linux reports KiB
  for (size_t i = 0; i < run.stages.size(); ++i) {
    const StageRuntime& rt = *run.stages[i];
    const bool is_source = (int)i == t.source;
    StageReport r;
    r.id = rt.spec->id;
    r.type = rt.spec->type;
    r.serial = rt.serial || is_source;
    r.threads = r.serial ? 1 : std::min(rt.spec->threads, std::max(1, total_threads));  // what it could use
    const StageCounters c = rt.counters.total();
    r.items_in = c.items_in;
    r.items_out = c.items_out;
    r.skipped = c.skipped;
    r.invocations = c.invocations;
    r.busy_s = c.busy_ns / 1e9;
    r.utilization = result.wall_s > 0 ? r.busy_s / (result.wall_s * r.threads) : 0;
    r.wait_input_s = is_source ? 0 : std::max(0.0, result.wall_s * r.threads - r.busy_s);
    r.wait_output_s = c.gap_ns / 1e9;
    r.order_wait_s = c.order_ns / 1e9;
    r.fork_s = c.fork_ns / 1e9;
    r.fork_tail_s = c.tail_ns / 1e9;
    r.piece_s = c.piece_ns / 1e9;
    result.stages.push_back(r);
  }
  result.bottleneck = diagnose(result.stages, result.wall_s, total_threads);
}

}  // namespace

RunResult run_pipeline(const PipelineSpec& spec, const RunOptions& opt) {
  RunResult result;
  Run run;
  run.spec = &spec;
  const int total_threads = opt.threads > 0 ? opt.threads : spec.threads;
  tbb::global_control gc(tbb::global_control::max_allowed_parallelism, (size_t)std::max(1, total_threads));

  RunContext& ctx = run.ctx;
  ctx.seed = spec.seed;
  ctx.epochs = spec.epochs;
  ctx.device = opt.device.empty() ? (spec.device == "auto" ? "cpu" : spec.device) : opt.device;
  ctx.pipeline_json = spec.resolved_json(false);
  ctx.pipeline_path = spec.source_path;
  ctx.start = opt.start;
  ctx.start_skip_samples = opt.start_skip_samples;
  ctx.quiet = opt.quiet;
  ctx.comm = opt.comm;
  ctx.cancel = &run.local_cancel;  // failures and Ctrl-C (forwarded by the source) both land here
  ctx.interrupt = opt.cancel;
  const int64_t origin = now_ns();
  struct rusage ru0 {};
  getrusage(RUSAGE_SELF, &ru0);
  const double cpu_origin = (double)ru0.ru_utime.tv_sec + (double)ru0.ru_stime.tv_sec +
                            1e-6 * (double)(ru0.ru_utime.tv_usec + ru0.ru_stime.tv_usec);
  if (!opt.trace_path.empty()) run.trace = std::make_unique<Trace>(origin);
  ctx.trace = run.trace.get();

  const Topology topo = build_stages(run, spec);
  auto* src_rt = run.stages[topo.source].get();
  auto* src_stage = dynamic_cast<SourceStage*>(src_rt->stage.get());
  if (!src_stage) throw Error("stage '" + src_rt->spec->id + "' is registered as a source but is not one");

  // Consumers start first: a resuming trainer sets the data position the source starts from.
  for (auto it = run.stages.rbegin(); it != run.stages.rend(); ++it) (*it)->stage->start(ctx);

  graph g;
  // The stage nodes live in `run`, which outlives `g`: destroy them while `g` still exists (a
  // node's destructor unregisters it from its graph; found by the ASan build, scripts/test).
  struct NodesBeforeGraph {
    Run& r;
    ~NodesBeforeGraph() {
      for (auto& s : r.stages) s->node.reset(), s->sequencer.reset();
    }
  } nodes_before_graph{run};

  SourceFeed feed{run, *src_rt, *src_stage, opt, ctx.start.epoch, ctx.start.index};
  input_node<Envelope> src(g, [&feed](tbb::flow_control& fc) { return feed(fc); });
  limiter_node<Envelope> limiter(g, (size_t)spec.in_flight);
  run.limiter = &limiter;
  make_edge(src, limiter);
  wire(g, run, topo, limiter);
  for (auto& h : run.hold_states) h->reserve(g);

  src.activate();
  g.wait_for_all();
  {
    std::lock_guard<std::mutex> lock(run.wake_mu);
    run.accepting = false;
  }
  g.wait_for_all();  // a wake posted between the first wait's end and the flag (a slot returned then)
  const int64_t t_end = now_ns();
  struct rusage ru1 {};
  getrusage(RUSAGE_SELF, &ru1);
  const bool user_stop = opt.cancel && opt.cancel->load();
  if (!run.failed && !user_stop) {
    const std::string stall = stall_reason(run, topo, feed);
    if (!stall.empty()) run.record_failure("engine", stall);
  }

  // finish(): the sink writes its final checkpoint / cache even after an interruption.
  for (auto& rt : run.stages) {
    try {
      rt->stage->finish(ctx);
    } catch (const Error& e) {
      run.record_failure(rt->spec->id, e.what());
    } catch (const std::exception& e) {
      run.record_failure(rt->spec->id, std::string("internal error: ") + e.what());
    }
  }

  result.wall_s = (t_end - origin) / 1e9;
  result.ok = !run.failed;
  result.error = run.first_error;
  result.interrupted = !run.failed && user_stop;
  result.skips = run.skips;
  result.skips_total = (int64_t)run.skips.size();
  result.skip_groups = group_skips(run.skips);
  result.summaries = ctx.summaries();
  result.figure_lines = ctx.figure_lines();
  result.threads = std::max(1, total_threads);
  {
    auto secs = [](const timeval& a, const timeval& b) { return (double)(b.tv_sec - a.tv_sec) + 1e-6 * (double)(b.tv_usec - a.tv_usec); };
    CpuUse& c = result.cpu;
    c.user_s = secs(ru0.ru_utime, ru1.ru_utime);
    c.system_s = secs(ru0.ru_stime, ru1.ru_stime);
    c.affinity_cpus = affinity_cpus();
    c.cores = std::min(result.threads, c.affinity_cpus);
    c.core_s = result.wall_s * c.cores;
    if (run.reached_last) {
      c.startup_s = (run.reached_last_ns - origin) / 1e9;
      c.startup_cpu_s = run.reached_last_cpu_s - cpu_origin;
      c.startup_core_s = c.startup_s * c.cores;
    }
  }
  fill_report(result, run, topo, total_threads);
  if (run.trace) {
    try {  // the run's report comes back either way; a trace that cannot be written fails it
      run.trace->write(opt.trace_path);
    } catch (const Error& e) {
      if (result.ok) result.error = std::string("trace: ") + e.what();
      result.ok = false;
      result.interrupted = false;
    }
  }
  return result;
}

std::string diagnose(const std::vector<StageReport>& stages, double wall, int total_threads) {
  if (stages.size() < 2 || wall <= 0) return "";
  const StageReport& sink = stages.back();
  const StageReport* busiest = nullptr;
  for (size_t i = 1; i + 1 < stages.size(); ++i)
    if (!busiest || stages[i].utilization > busiest->utilization) busiest = &stages[i];
  const double sink_wait = 1.0 - std::min(1.0, sink.busy_s / wall);
  char buf[1024];
  if (sink.utilization >= 0.8 || !busiest) {
    std::snprintf(buf, sizeof buf,
                  "'%s' (the sink) is busy %.0f%% of the run: the data path keeps up, the sink's own work is the limit.",
                  sink.id.c_str(), 100 * sink.utilization);
    return buf;
  }
  if (busiest->utilization >= 0.7) {
    std::string advice;
    if (busiest->threads < total_threads)
      advice = "give '" + busiest->id + "' more threads (\"threads\": " + std::to_string(std::min(total_threads, busiest->threads * 2)) + " or \"auto\")";
    else
      advice = "'" + busiest->id + "' already uses all " + std::to_string(total_threads) +
               " worker threads: more cores (--threads) or a cheaper configuration of that stage is what helps";
    std::snprintf(buf, sizeof buf, "'%s' waited %.0f%% of the run for data; '%s' is busy %.0f%% with %d thread%s: %s.",
                  sink.id.c_str(), 100 * sink_wait, busiest->id.c_str(), 100 * busiest->utilization,
                  busiest->threads, busiest->threads == 1 ? "" : "s", advice.c_str());
    return buf;
  }
  const StageReport& src = stages.front();
  std::snprintf(buf, sizeof buf,
                "no stage is saturated (busiest: '%s' at %.0f%%, sink '%s' at %.0f%%); the source was held back "
                "%.0f%% of the run: the run is latency-bound or short; raise \"in_flight\" or the batch size.",
                busiest->id.c_str(), 100 * busiest->utilization, sink.id.c_str(), 100 * sink.utilization,
                100 * std::min(1.0, src.wait_output_s / wall));
  return buf;
}

// Wrapped for the text table (the report's HTML folds the breaks into spaces).
const char* const kWaitLegend =
    "order s: envelopes ready before a serial stage but held until\n"
    "   an earlier one arrived, summed over envelopes; tail %: the share of a parallel stage's fork-join\n"
    "   time after the last of its pieces was handed to a thread (threads that came free had none left)";

std::string format_cpu_use(const CpuUse& c, int ranks, const std::string& last_stage) {
  char buf[640];
  std::string o;
  if (ranks > 1)
    std::snprintf(buf, sizeof buf,
                  "CPU over %d ranks: %.2f s user + %.2f s system = %.0f%% of their wall x cores (%d core%s each: the "
                  "fewer of the run's threads and the CPUs in the affinity mask)",
                  ranks, c.user_s, c.system_s, 100 * c.use(), c.cores, c.cores == 1 ? "" : "s");
  else
    std::snprintf(buf, sizeof buf,
                  "CPU: %.2f s user + %.2f s system = %.0f%% of %d core%s over the wall (the fewer of the run's threads "
                  "and the %d CPUs in the affinity mask)",
                  c.user_s, c.system_s, 100 * c.use(), c.cores, c.cores == 1 ? "" : "s", c.affinity_cpus);
  o = buf;
  if (c.startup_s >= 0) {
    std::snprintf(buf, sizeof buf, "; start-up (until the first item reached '%s': %.2f s%s) %.0f%%, then %.0f%%",
                  last_stage.c_str(), c.startup_s, ranks > 1 ? ", the longest rank's" : "", 100 * c.startup_use(),
                  100 * c.steady_use());
    o += buf;
  }
  return o;
}

std::string format_report(const RunResult& r) {
  std::ostringstream o;
  char buf[1024];
  if (r.ranks > 1)
    std::snprintf(buf, sizeof buf,
                  "\nWhere the time went, over %d ranks (wall %.2f s: the longest rank's; peak RSS of the largest process "
                  "%.0f MiB)\n",
                  r.ranks, r.wall_s, r.peak_rss_bytes / 1048576.0);
  else
    std::snprintf(buf, sizeof buf, "\nWhere the time went (wall %.2f s, peak RSS of the process %.0f MiB)\n", r.wall_s,
                  r.peak_rss_bytes / 1048576.0);
  o << buf;
  std::snprintf(buf, sizeof buf, "  %-12s %-16s %7s %9s %9s %8s %8s %7s %10s %10s %8s %6s\n", "stage", "type", "threads",
                "items in", "items out", "skipped", "busy s", "busy %", "idle s", "held s", "order s", "tail %");
  o << buf;
  for (size_t i = 0; i < r.stages.size(); ++i) {
    const StageReport& s = r.stages[i];
    // order s: serial stages after the source; tail %: stages that ran fork-joins.
    char order[32] = "-", tail[32] = "-";
    if (s.serial && i > 0) std::snprintf(order, sizeof order, "%.2f", s.order_wait_s);
    if (s.fork_s > 0) std::snprintf(tail, sizeof tail, "%.0f%%", 100 * s.tail_share());
    std::snprintf(buf, sizeof buf, "  %-12s %-16s %7d %9lld %9lld %8lld %8.2f %6.0f%% %10.2f %10.2f %8s %6s\n", s.id.c_str(),
                  s.type.c_str(), s.threads, (long long)s.items_in, (long long)s.items_out, (long long)s.skipped,
                  s.busy_s, 100 * s.utilization, s.wait_input_s, s.wait_output_s, order, tail);
    o << buf;
  }
  if (r.ranks > 1) {
    std::snprintf(buf, sizeof buf,
                  "  (items, skipped, busy s, idle s, held s and order s: summed over the %d ranks; threads: each rank's%s;\n"
                  "   busy %%: busy time / (wall x threads), every rank's added up; tail %%: every rank's fork-joins;\n"
                  "   idle: its threads waited for input; held: the source's next item waited for a place in\n"
                  "   in_flight; %s)\n",
                  r.ranks, r.threads_differ ? " (they differ: rank 0's)" : "", kWaitLegend);
    o << buf;
  } else {
    o << "  (busy %: busy time / (wall x threads); idle: its threads waited for input; held: the source's next\n"
         "   item waited for a place in in_flight; "
      << kWaitLegend << ")\n";
  }
  if (r.cpu.core_s > 0)
    o << "  " << format_cpu_use(r.cpu, r.ranks, r.stages.empty() ? std::string() : r.stages.back().id) << "\n";
  if (!r.bottleneck.empty()) o << "  Bottleneck: " << r.bottleneck << "\n";
  if (r.skips_total > 0) {
    o << "\nSkipped " << r.skips_total << " item(s)"
      << (r.ranks > 1 ? " over " + std::to_string(r.ranks) + " ranks (examples from each, with their rank)" : "") << ":\n";
    size_t shown = 0;
    for (const auto& s : r.skips) {
      if (++shown > 20) break;
      o << "  " << (s.rank >= 0 ? "[rank " + std::to_string(s.rank) + "] " : "") << "[" << s.stage << "] " << s.item
        << ": " << s.reason << "\n";
    }
    const int64_t listed = (int64_t)std::min<size_t>(r.skips.size(), 20);
    if (r.skips_total > listed) o << "  ... and " << (r.skips_total - listed) << " more\n";
  }
  return o.str();
}

}  // namespace sl
