// The engine: a validated PipelineSpec becomes a oneTBB flow graph and runs.
//
//   input_node(source) -> limiter(in_flight) -> stage -> stage(N threads) -> ... -> sequencer
//        -> serial stage (batch) -> ... -> sequencer -> serial sink (train)
//
// * Every source item travels in an Envelope with a sequence number; stages running on several
//   threads keep it, and a sequencer_node restores the order before each serial (stateful)
//   stage, so outputs do not depend on thread counts.
// * The limiter bounds the source items in flight (in_flight, plus the one the source node
//   holds ready while the limiter is closed); a source item is released when
//   the first stateful stage has consumed it (the batch stage releases it only once its
//   samples sit in a pool slot), so memory is a function of the config, not of the dataset.
// * Errors: a stage with on_error "skip" drops the item, counts it and records why; "fail"
//   stops the source, drains, and the run reports the error (exit code 1).
// * Cancellation: the cancel flag (Ctrl-C) stops the source; everything in flight drains; the
//   sink's finish() runs (the trainer writes a checkpoint); the run reports "interrupted".
#pragma once
#include <atomic>
#include <string>
#include <vector>

#include "graph/skips.h"
#include "graph/spec.h"
#include "graph/stage.h"

namespace sl {

struct StageReport {
  std::string id, type;
  int threads = 1;
  bool serial = false;
  int64_t items_in = 0, items_out = 0, skipped = 0, invocations = 0;
  double busy_s = 0;        // summed over threads
  double utilization = 0;   // busy / (wall * usable threads)
  double wait_input_s = 0;  // idle time of its threads: waiting for something to do
  double wait_output_s = 0; // the source: its next item waited for a place in in_flight (the limiter)
  // A serial stage: time envelopes spent ready before it but held in its sequencer until an
  // earlier one arrived, summed over envelopes (/ wall: envelopes held on average).
  double order_wait_s = 0;
  // A parallel stage whose envelopes' pieces ran as one fork-join (threads > 1, > 1 piece):
  // fork_s: the fork-joins' wall time, summed over envelopes; fork_tail_s: the part of it after
  // the envelope's last chunk of pieces had been handed to a thread (nothing left for a free
  // thread: the join waited for the slowest); piece_s: the pieces' own time, summed over threads.
  double fork_s = 0, fork_tail_s = 0, piece_s = 0;
  double tail_share() const { return fork_s > 0 ? fork_tail_s / fork_s : 0; }
};

// The process's CPU use over the run (from the graph's start to its end, the stage figures'
// interval): user + system time / (wall x the cores the run may use). Over the ranks of a
// data-parallel run every sum is every rank's (graph/run_totals.h).
struct CpuUse {
  double user_s = 0, system_s = 0;  // getrusage(RUSAGE_SELF) over the run
  double core_s = 0;                // wall x cores (summed over ranks): the denominator
  int cores = 0;                    // min(the run's threads, CPUs in the affinity mask), of each rank
  int affinity_cpus = 0;            // CPUs in the process's affinity mask (rank 0's)
  // Start-up: from the run's start until the first data item reached the last stage (the
  // stages started, the pipeline filled); -1 when none did. Over ranks: the longest rank's.
  double startup_s = -1, startup_cpu_s = 0, startup_core_s = 0;
  double use() const { return core_s > 0 ? (user_s + system_s) / core_s : 0; }
  double startup_use() const { return startup_core_s > 0 ? startup_cpu_s / startup_core_s : 0; }
  double steady_use() const {
    const double c = core_s - startup_core_s;
    return c > 0 ? (user_s + system_s - startup_cpu_s) / c : 0;
  }
};

struct RunOptions {
  int threads = 0;          // 0: the pipeline's "threads"
  std::string trace_path;   // Chrome-trace JSON; empty: none
  bool quiet = false;
  std::atomic<bool>* cancel = nullptr;  // set by a signal handler to stop the run
  Position start;                        // resume position
  int64_t start_skip_samples = 0;
  std::string device;                    // resolved device ("cpu", "cuda:0"); empty: from the spec
  Comm* comm = nullptr;                  // the ranks of a data-parallel run; null: one process
};

struct RunResult {
  bool ok = true;
  bool interrupted = false;
  std::string error;  // first failure, with its place
  double wall_s = 0;
  double peak_rss_bytes = 0;  // of the whole process, at the end of the run
  int threads = 1;            // worker threads of the run (of each rank)
  CpuUse cpu;
  std::vector<StageReport> stages;
  std::vector<SkipRecord> skips;       // every skipped item; of a data-parallel run, examples
  int64_t skips_total = 0;             // how many were skipped
  std::vector<SkipGroup> skip_groups;  // grouped by stage and cause (graph/skips.h)
  std::vector<std::string> summaries;
  std::vector<RunContext::FigureLine> figure_lines;  // the summaries whose numbers add up over ranks
  std::string bottleneck;  // one or two sentences: where the time went, what to change
  // ranks > 1: the figures are those of every rank of a data-parallel run, added up
  // (graph/run_totals.h says how, column by column); one process: 1.
  int ranks = 1;
  bool threads_differ = false;  // ranks > 1 whose runs had different thread counts (rank 0's shown)
  int exit_code() const { return interrupted ? 130 : (ok ? 0 : 1); }
};

RunResult run_pipeline(const PipelineSpec& spec, const RunOptions& opt);

// The end-of-run table and the bottleneck sentence.
std::string format_report(const RunResult& r);
// The CPU line of the table: "CPU: ... = 91% of 2 cores ...; start-up ... then ...".
std::string format_cpu_use(const CpuUse& c, int ranks, const std::string& last_stage);
// The table's one-line legend of the waiting columns (shared by the text table and the report).
extern const char* const kWaitLegend;
std::string diagnose(const std::vector<StageReport>& stages, double wall_s, int total_threads);

}  // namespace sl
