#include "train/run_log.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "graph/error.h"
#include "graph/trace.h"
#include "report/report.h"

namespace sl {

std::string format_duration(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  char buf[32];
  int t = (int)(s + 0.5);
  if (t >= 3600) std::snprintf(buf, sizeof buf, "%d:%02d:%02d", t / 3600, t / 60 % 60, t % 60);
  else std::snprintf(buf, sizeof buf, "%d:%02d", t / 60, t % 60);
  return buf;
}

RunLog::RunLog(int64_t log_every, std::string progress, double lr)
    : log_every_(log_every), progress_(std::move(progress)), lr_(lr) {}

void RunLog::start(bool rank0, bool quiet, int64_t epochs) {
  rank0_ = rank0;
  quiet_ = quiet;
  epochs_ = epochs;
}

void RunLog::open(const std::string& metrics_path, bool truncate, int64_t first_step, bool epoch_from_start) {
  first_step_ = epoch_start_step_ = first_step;
  epoch_from_start_ = epoch_from_start;
  if (!rank0_) return;
  std::error_code ec;
  const std::filesystem::path mp(metrics_path);
  if (mp.has_parent_path()) std::filesystem::create_directories(mp.parent_path(), ec);
  metrics_.open(metrics_path, truncate);
  tty_ = progress_ == "bar" || (progress_ == "auto" && ::isatty(2));
  t_start_ = now_ns();
}

void RunLog::note(const std::string& s) const {
  if (rank0_ && !quiet_) std::fprintf(stderr, "%s%s\n", tty_ ? "\r\033[K" : "", s.c_str());
}

void RunLog::step_loss(int64_t step, int64_t epoch, int64_t samples, double loss) {
  loss_sum_ += loss;
  ++loss_n_;
  if (logs_at(step)) train_line(step, step, epoch, samples, (float)loss, loss_sum_ / std::max<int64_t>(1, loss_n_));
}

void RunLog::read_loss(int64_t read_step, int64_t step, int64_t epoch, int64_t samples, float last, double mean) {
  if (logs_at(read_step)) train_line(read_step, step, epoch, samples, last, mean);
}

void RunLog::epoch_end(int64_t step) {
  if (steps_per_epoch_ == 0 && epoch_from_start_) steps_per_epoch_ = step - epoch_start_step_;
  epoch_start_step_ = step;
  epoch_from_start_ = true;
}

void RunLog::epoch_counts(int64_t step, int64_t epoch, const std::map<std::string, int64_t>& counts, int ranks) {
  if (!rank0_ || counts.empty()) return;
  std::string line = "{\"type\":\"epoch\",\"step\":" + std::to_string(step) + ",\"epoch\":" + std::to_string(epoch);
  if (ranks > 1) line += ",\"ranks\":" + std::to_string(ranks);  // the counts below are their sum
  std::string said;
  for (const auto& [name, n] : counts) {
    line += ",\"" + name + "\":" + std::to_string(n);  // names are the stages' own identifiers
    said += (said.empty() ? "" : ", ") + std::to_string(n) + " " + name;
  }
  metrics_.append(line + "}\n");
  note("epoch " + std::to_string(epoch + 1) + ": " + said + (ranks > 1 ? " (sum over " + std::to_string(ranks) + " ranks)" : ""));
}

void RunLog::train_line(int64_t logged_step, int64_t step, int64_t epoch, int64_t samples, float loss, double mean) {
  if (!rank0_) {
    loss_sum_ = 0;
    loss_n_ = 0;
    return;
  }
  const double el = (now_ns() - t_start_) / 1e9;
  const double sps = samples / std::max(el, 1e-9);
  char line[512];
  std::snprintf(line, sizeof line, "{\"type\":\"train\",\"step\":%lld,\"epoch\":%lld,\"loss\":%.6g,\"loss_avg\":%.6g,\"samples\":%lld,\"samples_per_s\":%.1f,\"elapsed_s\":%.2f,\"lr\":%.6g}\n",
                (long long)logged_step, (long long)epoch, loss, mean, (long long)samples, sps, el, lr_);
  metrics_.append(line);
  loss_sum_ = 0;
  loss_n_ = 0;
  if (quiet_) return;
  std::string eta = "after a full epoch";
  if (steps_per_epoch_ > 0) {
    const int64_t total = steps_per_epoch_ * epochs_;
    const double per_step = el / std::max<int64_t>(1, step - first_step_);
    eta = format_duration(per_step * (double)std::max<int64_t>(0, total - step));
  }
  std::snprintf(line, sizeof line, "epoch %lld/%lld  step %lld  %.0f samples/s  loss %.5f (avg %.5f)  ETA %s",
                (long long)epoch + 1, (long long)epochs_, (long long)logged_step, sps, loss, mean, eta.c_str());
  if (tty_) std::fprintf(stderr, "\r\033[K%s", line);
  else std::fprintf(stderr, "%s\n", line);
}

namespace {
// A category name as a JSON string's contents (names come from the user's map files).
std::string json_escape(const std::string& in) {
  std::string out;
  for (unsigned char c : in) {
    if (c == '"' || c == '\\') out += '\\', out += (char)c;
    else if (c < 0x20) {
      char u[8];
      std::snprintf(u, sizeof u, "\\u%04x", c);
      out += u;
    } else out += (char)c;
  }
  return out;
}
}  // namespace

std::string RunLog::eval(int64_t step, int64_t epoch, const RefineStats& s, const RefineStats* fixed) {
  char line[512];
  std::snprintf(line, sizeof line, "{\"type\":\"eval\",\"step\":%lld,\"epoch\":%lld,\"lines\":%lld,\"mse\":%.6g,\"err_before_m\":%.6g,\"err_after_m\":%.6g,\"improved\":%.4f",
                (long long)step, (long long)epoch, (long long)s.lines, s.mse(), s.mean_before(), s.mean_after(), s.improved_share());
  // Per category, over its line points: the refined error's mean, median and p95, and the input's.
  std::string rec = line;
  rec += ",\"categories\":{";
  bool first = true;
  for (const auto& [name, pe] : s.by_category) {
    const Spread a = spread_of(pe.after), b = spread_of(pe.before);
    char c[320];  // numbers only: the name (any length) is appended as a string
    std::snprintf(c, sizeof c,
                  "\":{\"lines\":%lld,\"points\":%lld,\"mean_m\":%.6g,\"median_m\":%.6g,\"p95_m\":%.6g,"
                  "\"input_mean_m\":%.6g,\"input_median_m\":%.6g,\"input_p95_m\":%.6g}",
                  (long long)pe.lines, (long long)pe.after.size(), a.mean, a.median, a.p95, b.mean, b.median, b.p95);
    rec += (first ? "\"" : ",\"") + json_escape(name) + c;
    first = false;
  }
  rec += "}";
  if (fixed) {
    const Spread f = fixed->after_spread();
    char c[200];
    std::snprintf(c, sizeof c, ",\"fixed_point\":{\"mean_m\":%.6g,\"median_m\":%.6g,\"p95_m\":%.6g,\"categories\":{", f.mean,
                  f.median, f.p95);
    rec += c;
    bool first_fixed = true;
    for (const auto& [name, pe] : fixed->by_category) {
      const Spread a = spread_of(pe.after);
      std::snprintf(c, sizeof c, "\":{\"mean_m\":%.6g,\"median_m\":%.6g,\"p95_m\":%.6g}", a.mean, a.median, a.p95);
      rec += (first_fixed ? "\"" : ",\"") + json_escape(name) + c;
      first_fixed = false;
    }
    rec += "}}";
  }
  rec += "}\n";
  metrics_.append(rec);
  char msg[256];
  std::snprintf(msg, sizeof msg, "eval after epoch %lld (step %lld): %lld val lines, mean point error %.3f m -> %.3f m (%.0f%%), %.0f%% improved",
                (long long)epoch + 1, (long long)step, (long long)s.lines, s.mean_before(), s.mean_after(),
                s.mean_before() > 0 ? 100 * s.mean_after() / s.mean_before() : 0.0, 100 * s.improved_share());
  return msg;
}

void RunLog::report(const std::string& run_dir, bool force) {
  sync();
  const int64_t t0 = now_ns();
  if (!force && t0 - report_done_ns_ < 20 * report_cost_ns_) return;
  try {
    report::write_report(run_dir);
  } catch (const WriteError&) {
    throw;
  } catch (const std::exception& e) {
    note(std::string("warning: run report not written: ") + e.what());
  }
  report_done_ns_ = now_ns();
  report_cost_ns_ = report_done_ns_ - t0;
}

bool RunLog::evaluated_at(int64_t step) const {
  if (!metrics_.is_open()) return false;
  try {
    return read_file(metrics_.path()).find("{\"type\":\"eval\",\"step\":" + std::to_string(step) + ",") !=
           std::string::npos;
  } catch (const Error&) {
    return false;  // unreadable (not a regular file, e.g. /dev/null): evaluate
  }
}

void RunLog::sync() {
  if (metrics_.is_open()) metrics_.sync();
}

void RunLog::end_progress_line() {
  if (tty_) std::fprintf(stderr, "\n");
}

void RunLog::close() {
  if (metrics_.is_open()) metrics_.close();
}

}  // namespace sl
