// What a stage implementation sees: items in, items out, a run context. Stage adapters stay
// thin; the math lives in plain functions (geometry/, formats/, dataset/, kernels/) tested alone.
#pragma once
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <variant>
#include <vector>

#include "graph/comm.h"
#include "graph/message.h"
#include "graph/registry.h"

namespace sl {

struct Batch;
class Trace;

// One unit of data between stages.
using Item = std::variant<std::shared_ptr<const SceneRef>, std::shared_ptr<const Scene>,
                          std::shared_ptr<Sample>, std::shared_ptr<Batch>>;

// Where an item sits in the data stream: the epoch and the position of its source item in that
// epoch's order. Checkpoints store it, so a resumed run continues at the same place.
struct Position {
  int64_t epoch = 0;
  int64_t index = 0;  // position of the source item (scene) within the epoch's order
};

// An envelope is what travels on graph edges: every source item becomes one envelope; markers
// (end of an epoch, end of the stream) travel in order with the data.
struct Envelope {
  enum class Type { Data, EpochEnd, EndOfStream, Wake };
  Type type = Type::Data;
  uint64_t seq = 0;  // contiguous per producer, used to restore order after parallel stages
  Position pos;
  int64_t ready_ns = 0;  // when its producer handed it on (now_ns); the engine's order-wait figure
  std::vector<Item> items;
};

class RunContext;

class Emitter {
 public:
  virtual ~Emitter() = default;
  virtual void emit(Item item) = 0;
  // Serial stages that group items (batch) may emit a marker of their own.
  virtual void emit_marker(Envelope::Type type, Position pos) = 0;
};

class Stage {
 public:
  virtual ~Stage() = default;
  // Called before the graph runs, on the main thread (allocate pools, open files, load weights).
  virtual void start(RunContext& ctx) {}
  // One input item -> zero or more outputs. Must be thread-safe when the stage runs on more
  // than one thread. Throwing sl::Error applies the stage's error policy to this item.
  virtual void process(Item in, const Position& pos, Emitter& out, RunContext& ctx);
  // Stages that hold on to source items (defers_release) get each envelope whole: all outputs
  // of one source item, possibly none. Errors thrown here fail the run.
  virtual void process_all(const Envelope& in, Emitter& out, RunContext& ctx) {
    for (const auto& it : in.items) process(it, in.pos, out, ctx);
  }
  // Markers reach serial stages in order. Default: pass them on.
  virtual void on_marker(const Envelope& m, Emitter& out, RunContext& ctx) { out.emit_marker(m.type, m.pos); }
  // Serial stages with internal queues are woken when a resource they wait for frees up.
  virtual void on_wake(Emitter& out, RunContext& ctx) {}
  // After the graph drained (also after an interruption), on the main thread.
  virtual void finish(RunContext& ctx) {}
  // A stage that holds on to source items (batch, waiting for a free slot) returns true and
  // calls release_source_items(n) when it no longer holds them; otherwise the engine counts a
  // source item as done when this stage has processed it.
  virtual bool defers_release() const { return false; }
  // A sink whose items are consumed outside the graph (the loader's, loader/loader.h) returns
  // true: its consumer may hold every batch slot while the graph has nothing to do, which must
  // not end the run (nor count as a stall). The engine keeps the run open until the stage calls
  // release_hold() -- once the end of the stream reached it, or its consumer stopped -- or the
  // run fails.
  virtual bool holds_run_open() const { return false; }

  // Set by the engine before start().
  std::function<void(int64_t)> release_source_items = [](int64_t) {};
  std::function<void()> wake = [] {};  // posts a Wake to this (serial) stage: on_wake() runs
  // See holds_run_open(); set before start(), idempotent, callable from any thread.
  std::function<void()> release_hold = [] {};
  // One output of a fan-out is bad (e.g. a line with too few points): applies the stage's
  // error policy to it alone -- skip: recorded and counted; fail: the run stops.
  std::function<void(const std::string& item, const std::string& reason)> reject =
      [](const std::string&, const std::string&) {};
  std::string id;
};

// A source enumerates the items of one epoch in order. In a data-parallel run (ctx.world() > 1)
// it enumerates this rank's share only (dataset/epoch_order.h does the dealing).
class SourceStage : public Stage {
 public:
  void process(Item, const Position&, Emitter&, RunContext&) override {}
  virtual int64_t epoch_size() = 0;
  // The item at `index` of epoch `epoch` (shuffling is the source's business, seeded per epoch).
  virtual Item make(int64_t epoch, int64_t index, RunContext& ctx) = 0;
};

// A record of a skipped item: which stage, which item, why.
struct SkipRecord {
  std::string stage, item, reason;
  int rank = -1;  // the rank that skipped it, in the summary of a data-parallel run (graph/run_totals.h)
};

class RunContext {
 public:
  uint64_t seed = 0;
  int64_t epochs = 1;
  std::string device = "cpu";      // resolved device: "cpu" or "cuda:N"
  std::string pipeline_json;       // the resolved pipeline (for checkpoints)
  std::string pipeline_path;
  Position start;                  // where the source starts (resume)
  int64_t start_skip_samples = 0;  // samples of the first source item already consumed (resume)
  Trace* trace = nullptr;
  bool quiet = false;
  // The ranks of a data-parallel run (graph/comm.h); null: one process. Sources read their
  // shard (rank, world); the trainer exchanges gradients. A nested run (evaluation) has none.
  Comm* comm = nullptr;
  int rank() const { return comm ? comm->rank() : 0; }
  int world() const { return comm ? comm->size() : 1; }

  // Cancellation: a signal handler or a failing stage sets it; the source stops emitting.
  std::atomic<bool>* cancel = nullptr;
  bool cancelled() const { return cancel && cancel->load(std::memory_order_relaxed); }
  // The user's interrupt alone (Ctrl-C / SIGTERM), without the run's own stops (max_steps, a
  // failure): what a nested run (evaluation) must stop on. Null when nobody can interrupt.
  std::atomic<bool>* interrupt = nullptr;

  // Summary lines a stage wants printed after the run (e.g. final eval results).
  void add_summary(const std::string& line);
  std::vector<std::string> summaries() const;

  // A summary line whose numbers add up over the ranks of a data-parallel run (the scene cache's
  // hits and misses): `figures` are this rank's, by name; `line` writes the text from figures and
  // the number of ranks they cover. One process prints line(figures, 1); a data-parallel run
  // prints rank 0's line written from every rank's figures under the same `key`, each name summed,
  // or the largest for a name that starts with "max_" (graph/run_totals.h).
  using FigureText = std::function<std::string(const std::map<std::string, double>& figures, int ranks)>;
  struct FigureLine {
    size_t line = 0;  // its place in summaries()
    std::string key;
    std::map<std::string, double> figures;
    FigureText text;
  };
  void add_summary(const std::string& key, const std::map<std::string, double>& figures, FigureText text);
  std::vector<FigureLine> figure_lines() const;
  // Whether a stage's end-of-run lines are wanted: a run that is not quiet prints them; a rank
  // other than 0 of a data-parallel run (quiet) keeps them for their figures, which rank 0 adds
  // to its own line.
  bool summarizes() const { return !quiet || rank() > 0; }

  // Counters of the data a stage handled for an epoch's items (crop_tiles: tile loads and cache
  // hits), by the epoch of the item: the trainer writes them when that epoch ends, by which time
  // every item of the epoch has passed every stage (markers travel in order with the data).
  void count(int64_t epoch, const std::string& name, int64_t n);
  std::map<std::string, int64_t> counts(int64_t epoch) const;  // empty when nothing was counted

 private:
  mutable std::mutex mu_;
  std::vector<std::string> summary_;
  std::vector<FigureLine> figure_lines_;
  std::map<int64_t, std::map<std::string, int64_t>> counts_;
};

}  // namespace sl
