// The run report: RUN_DIR/report.html, one self-contained page (inline SVG and CSS, no scripts,
// nothing fetched) with the loss, learning rate, evaluation and speed curves, where the time
// went, skipped items, before/after pictures of a few validation lines, and the run's facts.
// It reads what a run leaves in its folder: metrics.jsonl, run.json, eval_examples.json.
#pragma once
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "report/eval_examples.h"
#include "report/run_facts.h"

namespace sl::report {

struct TrainRow {
  int64_t step = 0, epoch = 0, samples = 0;
  double loss = NAN, loss_avg = NAN, samples_per_s = NAN, elapsed_s = NAN, lr = NAN;
};
struct EvalRow {
  int64_t step = 0, epoch = 0, lines = 0;
  double mse = NAN, err_before_m = NAN, err_after_m = NAN, improved = NAN;
};

struct Metrics {
  std::vector<TrainRow> train;
  std::vector<EvalRow> eval;
  int64_t lines = 0;                  // lines in the file, readable or not
  std::vector<std::string> problems;  // "<path>:<line>: <reason>", one per unreadable line
};

// Reads a metrics JSON Lines file. Never throws for its content: a line that does not parse
// (a run killed mid-write leaves a cut last line) or lacks a field is listed in `problems`
// and the other lines are kept. A missing file is one problem.
Metrics read_metrics(const std::string& path);

// A resumed run appends to the metrics file from its checkpoint's step, so the steps the
// interrupted run logged after that checkpoint appear twice: the later lines supersede them.
// Drops the superseded rows and returns one note per resume ("" when there was none).
std::vector<std::string> drop_superseded(Metrics& m);

struct RunData {
  std::string dir;
  std::string metrics_path;
  Metrics metrics;
  std::optional<RunFacts> facts;
  std::optional<EvalExamples> examples;
  std::vector<std::string> notes;  // what could not be read, shown at the top of the page
};

// Everything the report shows, from the files of `dir`.
RunData load_run(const std::string& dir);

std::string render_html(const RunData& run);

// load_run + render_html, written atomically to dir/report.html; returns that path. Throws
// sl::Error when `dir` is not a folder or the page cannot be written.
std::string write_report(const std::string& dir);

// Width of the wide charts, in pixels (their plots downsample to plot_width of it).
constexpr int kWideChart = 880;
constexpr int kHalfChart = 430;

}  // namespace sl::report
