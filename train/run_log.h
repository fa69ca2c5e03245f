// The account train_step gives of a run, on rank 0 (the other ranks keep quiet): the metrics file
// (JSON Lines: a "train" line per logged step with its loss and the mean since the previous
// line, an "eval" line per evaluation), the progress line on stderr (one live line on a
// terminal, plain lines otherwise) with the ETA, the notes printed between them, and the run
// report (report/report.h) that is drawn from them.
#pragma once
#include <cstdint>
#include <map>
#include <string>

#include "graph/atomic_file.h"
#include "train/metrics.h"

namespace sl {

// "m:ss" or "h:mm:ss"; "?" for a negative or non-finite number of seconds.
std::string format_duration(double seconds);

class RunLog {
 public:
  // log_every: a train line every N steps; progress: "auto" (a live line on a terminal), "bar",
  // "lines"; lr: written with every train line.
  RunLog(int64_t log_every, std::string progress, double lr);
  void set_lr(double lr) { lr_ = lr; }  // the learning rate the metrics lines report from now on

  // First, on every rank: only rank 0 writes or prints anything, and nothing under quiet.
  void start(bool rank0, bool quiet, int64_t epochs);
  // Rank 0, once its start is known: a fresh run empties the metrics file, a resumed one appends
  // to it; the speed and the ETA count from first_step (a resumed run's first step).
  void open(const std::string& metrics_path, bool truncate, int64_t first_step, bool epoch_from_start);

  // A line between the progress lines (rank 0, unless quiet).
  void note(const std::string& line) const;

  // The loss of the step just trained (the CPU's; a synced step's global mean): the train line
  // at log steps, with the mean of the losses since the previous line.
  void step_loss(int64_t step, int64_t epoch, int64_t samples, double loss);
  // A GPU run's asynchronous read: the loss of step `read_step` and the mean since the previous
  // read, taken at step `step` (speed and ETA).
  void read_loss(int64_t read_step, int64_t step, int64_t epoch, int64_t samples, float last, double mean);
  // An epoch ended after `step` steps: the steps per epoch (for the ETA) come from the first one
  // seen whole (a resumed run's first epoch may have started in the middle).
  void epoch_end(int64_t step);
  // The counters stages kept for that epoch (RunContext::count; e.g. crop_tiles' tile_loads and
  // tile_hits): an "epoch" line, and a note. Nothing when there are none. ranks > 1: the counts are
  // the sum over that many ranks (ranks.h: sum_counts_over_ranks), and both say so.
  void epoch_counts(int64_t step, int64_t epoch, const std::map<std::string, int64_t>& counts, int ranks = 1);
  // The eval line; returns the sentence that says it ("eval after epoch ...").
  // `fixed`: the same evaluation given the true lines (the fixed point), when it ran; it goes into
  // the record as "fixed_point" (mean, median, p95 and per category, metres).
  std::string eval(int64_t step, int64_t epoch, const RefineStats& s, const RefineStats* fixed = nullptr);

  // The run report, rewritten after checkpoints so that it can be reloaded while the run goes
  // on: a report that cannot be made costs a warning, one that cannot be written (a full disk,
  // sl::WriteError) ends the run like a checkpoint would. The metrics so far reach the disk
  // first. Unless forced, at least 20 times its drawing time passes between two (at most ~5% of
  // a fast GPU run whose metrics file has grown long).
  void report(const std::string& run_dir, bool force);

  bool logs_at(int64_t step) const { return step % log_every_ == 0; }
  // Whether the metrics file already holds an evaluation of `step` (a rerun of a finished run, or
  // one killed after its final evaluation, need not evaluate the same weights again).
  bool evaluated_at(int64_t step) const;
  const std::string& metrics_path() const { return metrics_.path(); }
  void sync();              // the lines so far on the disk (before the report reads them)
  void end_progress_line();  // a live progress line gets its newline
  void close();

 private:
  void train_line(int64_t logged_step, int64_t step, int64_t epoch, int64_t samples, float loss, double mean);

  int64_t log_every_;
  std::string progress_;
  double lr_;
  bool rank0_ = false, quiet_ = true, tty_ = false;
  int64_t epochs_ = 0, t_start_ = 0, first_step_ = 0;
  int64_t steps_per_epoch_ = 0, epoch_start_step_ = 0;
  bool epoch_from_start_ = true;
  double loss_sum_ = 0;
  int64_t loss_n_ = 0;
  int64_t report_done_ns_ = 0, report_cost_ns_ = 0;
  AppendFile metrics_;
};

}  // namespace sl
