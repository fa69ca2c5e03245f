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
  double wait_output_s = 0; // time held back by backpressure (the source, on the limiter)
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
std::string diagnose(const std::vector<StageReport>& stages, double wall_s, int total_threads);

}  // namespace sl
