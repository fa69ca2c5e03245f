#include "report/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>
#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>

#include "graph/atomic_file.h"
#include "graph/error.h"
#include "graph/json_depth.h"
#include "report/charts.h"

namespace sl::report {

namespace fs = std::filesystem;

// ---- reading -----------------------------------------------------------------------------------

namespace {

std::optional<double> number(const rapidjson::Value& o, const char* k) {
  if (!o.HasMember(k) || !o[k].IsNumber()) return std::nullopt;
  return o[k].GetDouble();
}

}  // namespace

Metrics read_metrics(const std::string& path) {
  Metrics m;
  std::error_code ec;
  const auto st = fs::status(path, ec);
  if (!ec && fs::exists(st) && !fs::is_regular_file(st)) {
    // A device (/dev/zero never ends), a pipe (may never be written) or a folder: not read.
    m.problems.push_back(path + ": not a regular file (a folder, device or pipe): not read");
    return m;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    m.problems.push_back(path + ": cannot be opened (" + (fs::exists(path) ? "unreadable" : "no such file") + ")");
    return m;
  }
  // A metrics line is a few hundred bytes: a longer one is garbage (a file named by a tampered
  // run.json, or no metrics file at all) and is skipped to its newline, not held in memory.
  constexpr size_t kMaxLine = size_t(16) << 20;
  std::streambuf* sb = in.rdbuf();
  std::string line;
  int64_t n = 0;
  for (;;) {
    line.clear();
    bool too_long = false, at_end = false, any = false;
    for (;;) {
      const int c = sb->sbumpc();
      if (c == std::char_traits<char>::eof()) {
        at_end = true;
        break;
      }
      any = true;
      if (c == '\n') break;
      if (line.size() < kMaxLine) line.push_back((char)c);
      else too_long = true;
    }
    if (!any) break;
    ++n;
    const bool last_unterminated = at_end;  // the file ended without a newline
    const std::string where = path + ":" + std::to_string(n);
    if (too_long) {
      m.problems.push_back(where + ": a line of more than " + std::to_string(kMaxLine) + " bytes: not a metrics line");
      continue;
    }
    if (line.empty()) continue;
    if (json_depth_exceeded_at(line) >= 0) {
      m.problems.push_back(where + ": JSON nested deeper than " + std::to_string(kJsonMaxDepth) + " levels");
      continue;
    }
    rapidjson::Document d;
    d.Parse(line.c_str(), line.size());
    if (d.HasParseError() || !d.IsObject()) {
      std::string why = d.HasParseError() ? std::string(rapidjson::GetParseError_En(d.GetParseError())) + " at column " +
                                                std::to_string(d.GetErrorOffset() + 1)
                                          : "not a JSON object";
      if (last_unterminated) why += " -- the last line, cut short (was the run killed while writing it?)";
      m.problems.push_back(where + ": " + why);
      continue;
    }
    const std::string type = d.HasMember("type") && d["type"].IsString() ? d["type"].GetString() : "";
    const auto step = number(d, "step");
    if (!step) {
      m.problems.push_back(where + ": no numeric \"step\"");
      continue;
    }
    if (type == "train") {
      TrainRow r;
      r.step = (int64_t)*step;
      r.epoch = (int64_t)number(d, "epoch").value_or(0);
      r.samples = (int64_t)number(d, "samples").value_or(0);
      r.loss = number(d, "loss").value_or(NAN);
      r.loss_avg = number(d, "loss_avg").value_or(NAN);
      r.samples_per_s = number(d, "samples_per_s").value_or(NAN);
      r.elapsed_s = number(d, "elapsed_s").value_or(NAN);
      r.lr = number(d, "lr").value_or(NAN);
      if (!std::isfinite(r.loss)) m.problems.push_back(where + ": no finite \"loss\" (kept; not drawn)");
      m.train.push_back(r);
    } else if (type == "eval") {
      EvalRow r;
      r.step = (int64_t)*step;
      r.epoch = (int64_t)number(d, "epoch").value_or(0);
      r.lines = (int64_t)number(d, "lines").value_or(0);
      r.mse = number(d, "mse").value_or(NAN);
      r.err_before_m = number(d, "err_before_m").value_or(NAN);
      r.err_after_m = number(d, "err_after_m").value_or(NAN);
      r.improved = number(d, "improved").value_or(NAN);
      m.eval.push_back(r);
    } else if (type == "epoch") {
      // A data stage's counts for an epoch (tile loads and cache hits of a tiled map): not drawn.
    } else {
      m.problems.push_back(where + ": unknown \"type\" '" + type + "' (expected train, eval or epoch)");
    }
  }
  m.lines = n;
  return m;
}

namespace {

template <class Row>
size_t drop_superseded_rows(std::vector<Row>& rows, std::vector<int64_t>* resumed_at) {
  std::vector<Row> kept;
  size_t dropped = 0;
  for (const Row& r : rows) {
    if (!kept.empty() && r.step <= kept.back().step) {
      if (resumed_at) resumed_at->push_back(r.step);
      const size_t before = kept.size();
      while (!kept.empty() && kept.back().step >= r.step) kept.pop_back();
      dropped += before - kept.size();
    }
    kept.push_back(r);
  }
  rows = std::move(kept);
  return dropped;
}

}  // namespace

std::vector<std::string> drop_superseded(Metrics& m) {
  std::vector<int64_t> resumed_at;
  const size_t train = drop_superseded_rows(m.train, &resumed_at);
  const size_t eval = drop_superseded_rows(m.eval, nullptr);
  std::vector<std::string> notes;
  for (int64_t s : resumed_at)
    notes.push_back("the run was resumed at step " + std::to_string(s) + ": the lines the interrupted run logged from there on are superseded by the resumed run's");
  if (train + eval > 0)
    notes.push_back(std::to_string(train) + " training and " + std::to_string(eval) + " evaluation line(s) superseded in all; not drawn");
  return notes;
}

RunData load_run(const std::string& dir) {
  RunData r;
  r.dir = dir;
  const std::string facts_path = (fs::path(dir) / "run.json").string();
  if (fs::exists(facts_path) && !fs::is_regular_file(facts_path)) {
    r.notes.push_back(facts_path + ": not a regular file (a folder, device or pipe): no run facts");
  } else if (fs::exists(facts_path)) {
    try {
      r.facts = parse_run_facts(read_file(facts_path), facts_path);
    } catch (const Error& e) {
      r.notes.push_back(std::string("run facts unreadable: ") + e.what());
    }
  } else {
    r.notes.push_back(facts_path + " not found: no run facts, stage table or skipped items (the run was not started by "
                                   "`streamline run`, or by an older version)");
  }
  r.metrics_path = r.facts && !r.facts->metrics_path.empty() ? r.facts->metrics_path
                                                             : (fs::path(dir) / "metrics.jsonl").string();
  r.metrics = read_metrics(r.metrics_path);
  for (auto& n : drop_superseded(r.metrics)) r.notes.push_back(n);
  const std::string ex_path = (fs::path(dir) / "eval_examples.json").string();
  if (fs::exists(ex_path) && !fs::is_regular_file(ex_path)) {
    r.notes.push_back(ex_path + ": not a regular file (a folder, device or pipe): no before/after pictures");
  } else if (fs::exists(ex_path)) {
    try {
      r.examples = parse_eval_examples(read_file(ex_path), ex_path);
    } catch (const Error& e) {
      r.notes.push_back(std::string("before/after pictures unreadable: ") + e.what());
    }
  }
  return r;
}

// ---- drawing -------------------------------------------------------------------------------------

namespace {

// TensorBoard's default smoothing weight, raised for long runs so that the average spans about
// a 200th of the run (what one does with TensorBoard's slider on 100,000 steps).
double smoothing_weight(size_t n) { return std::clamp(1.0 - 200.0 / std::max<size_t>(n, 1), 0.6, 0.999); }

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}
// Numbers as the metrics file writes them (%.6g), so the page and the file agree digit for digit.
std::string g6(double v) { return std::isfinite(v) ? fmt("%.6g", v) : "–"; }

std::string duration(double s) {
  if (!std::isfinite(s) || s < 0) return "–";
  if (s < 60) return fmt("%.1f s", s);
  const int t = (int)(s + 0.5);
  char b[32];
  if (t >= 3600) std::snprintf(b, sizeof b, "%d h %02d min %02d s", t / 3600, t / 60 % 60, t % 60);
  else std::snprintf(b, sizeof b, "%d min %02d s", t / 60, t % 60);
  return b;
}

std::string pretty_json(const std::string& text) {
  if (json_depth_exceeded_at(text) >= 0) return text;
  rapidjson::Document d;
  d.Parse(text.c_str(), text.size());
  if (d.HasParseError()) return text;
  rapidjson::StringBuffer sb;
  rapidjson::PrettyWriter<rapidjson::StringBuffer> w(sb);
  w.SetIndent(' ', 2);
  w.SetFormatOptions(rapidjson::kFormatSingleLineArray);
  d.Accept(w);
  return sb.GetString();
}

// The constant learning rate of the pipeline's train_step (what the trainer applies when the
// metrics carry no "lr"), or NaN.
double pipeline_lr(const std::string& pipeline_json) {
  if (json_depth_exceeded_at(pipeline_json) >= 0) return NAN;
  rapidjson::Document d;
  d.Parse(pipeline_json.c_str(), pipeline_json.size());
  if (d.HasParseError() || !d.IsObject() || !d.HasMember("stages") || !d["stages"].IsArray()) return NAN;
  for (const auto& s : d["stages"].GetArray()) {
    if (!s.IsObject() || !s.HasMember("type") || !s["type"].IsString() || std::string(s["type"].GetString()) != "train_step")
      continue;
    if (s.HasMember("params") && s["params"].IsObject() && s["params"].HasMember("optimizer")) {
      const auto& o = s["params"]["optimizer"];
      if (o.IsObject() && o.HasMember("lr") && o["lr"].IsNumber()) return o["lr"].GetDouble();
    }
  }
  return NAN;
}

std::string card(const std::string& label, const std::string& value, const std::string& key, const std::string& sub = "") {
  return "<div class=\"card\"><div class=\"label\">" + html_escape(label) + "</div><div class=\"value\" data-metric=\"" +
         key + "\">" + html_escape(value) + "</div>" + (sub.empty() ? "" : "<div class=\"sub\">" + html_escape(sub) + "</div>") +
         "</div>";
}

std::string loss_section(const Metrics& m) {
  const double w = smoothing_weight(m.train.size());
  Series raw{"loss", "#7fb3e0"}, smooth{"smoothed (EMA " + fmt("%g", w) + ")", "#1f5fa8"};
  raw.width = 1, raw.opacity = 0.8, smooth.width = 2;
  std::vector<double> y;
  for (const auto& r : m.train) {
    raw.points.push_back({(double)r.step, r.loss});
    y.push_back(r.loss);
  }
  const auto s = smooth_ema(y, w);
  for (size_t i = 0; i < s.size(); ++i) smooth.points.push_back({(double)m.train[i].step, s[i]});
  Chart c;
  c.id = "chart-loss";
  c.x_label = "step";
  c.y_label = "training loss (MSE of the offsets, m²)";
  c.width = kWideChart;
  c.height = 300;
  c.series = {raw, smooth};
  return "<h2>Loss</h2>" + render_chart(c) +
         "<p class=\"note\">The loss of the batch at each logged step; the dark line is TensorBoard's smoothing (an "
         "exponential moving average, start-up bias removed) with weight " + fmt("%g", w) +
         ": TensorBoard's 0.6, raised on long runs to average over about a 200th of the run. The y axis turns logarithmic when the values span two decades or more.</p>";
}

std::string lr_section(const Metrics& m, const std::optional<RunFacts>& facts) {
  Series lr{"learning rate", "#8a4fbf"};
  lr.width = 2;
  bool logged = false;
  for (const auto& r : m.train)
    if (std::isfinite(r.lr)) {
      lr.points.push_back({(double)r.step, r.lr});
      logged = true;
    }
  std::string note = "As logged in the metrics file at each logged step.";
  if (!logged && facts && !m.train.empty()) {
    const double v = pipeline_lr(facts->pipeline_json);
    if (std::isfinite(v)) {
      lr.points = {{(double)m.train.front().step, v}, {(double)m.train.back().step, v}};
      lr.name = "learning rate (constant)";
      note = "The metrics file has no \"lr\" (an older run): the pipeline's constant optimizer.lr is drawn.";
    }
  }
  Chart c;
  c.id = "chart-lr";
  c.x_label = "step";
  c.y_label = "learning rate";
  c.width = kHalfChart;
  c.height = 220;
  c.series = {lr};
  return "<div class=\"half\"><h3>Learning rate</h3>" + render_chart(c) + "<p class=\"note\">" + html_escape(note) +
         "</p></div>";
}

std::string speed_section(const Metrics& m) {
  Series interval{"over the last interval", "#2a9d5c"}, avg{"average since start", "#555"};
  interval.width = 1.5, avg.width = 1.5, avg.dashed = true;
  double offset = 0;  // a resumed run restarts its clock: its times continue the earlier ones
  for (size_t i = 0; i < m.train.size(); ++i) {
    const auto& r = m.train[i];
    if (i > 0 && r.elapsed_s < m.train[i - 1].elapsed_s) offset += m.train[i - 1].elapsed_s;
    avg.points.push_back({offset + r.elapsed_s, r.samples_per_s});
    if (i > 0) {
      const auto& p = m.train[i - 1];
      const double dt = r.elapsed_s - p.elapsed_s;
      // ... and its sample count: no interval across the restart.
      if (dt > 0 && r.samples > p.samples) interval.points.push_back({offset + r.elapsed_s, (r.samples - p.samples) / dt});
    }
  }
  // Seconds, minutes or hours, whichever keeps the tick labels short.
  const double end = avg.points.empty() ? 0 : avg.points.back().x;
  const auto [unit, per] = end > 3 * 3600 ? std::pair<const char*, double>{"h", 3600}
                           : end > 600    ? std::pair<const char*, double>{"min", 60}
                                          : std::pair<const char*, double>{"s", 1};
  for (auto* s : {&interval, &avg})
    for (auto& p : s->points) p.x /= per;
  Chart c;
  c.id = "chart-speed";
  c.x_label = std::string("time since the run started (") + unit + ")";
  c.y_label = "training samples/s";
  c.width = kHalfChart;
  c.height = 220;
  c.y_from_zero = true;
  c.y_scale = Chart::YScale::Linear;
  c.series = {interval, avg};
  return "<div class=\"half\"><h3>Throughput</h3>" + render_chart(c) +
         "<p class=\"note\">Samples trained per second between consecutive logged steps, and the running average "
         "the metrics file records.</p></div>";
}

std::string eval_section(const Metrics& m) {
  Series before{"noisy input", "#d9822b"}, after{"refined", "#1f5fa8"}, improved{"lines improved", "#2a9d5c"};
  before.dashed = true, before.markers = after.markers = improved.markers = true;
  before.width = after.width = improved.width = 2;
  for (const auto& r : m.eval) {
    before.points.push_back({(double)r.step, r.err_before_m});
    after.points.push_back({(double)r.step, r.err_after_m});
    improved.points.push_back({(double)r.step, 100 * r.improved});
  }
  Chart c;
  c.id = "chart-eval-error";
  c.x_label = "step";
  c.y_label = "mean point error (m)";
  c.width = kHalfChart;
  c.height = 240;
  c.y_from_zero = true;
  c.y_scale = Chart::YScale::Linear;
  c.series = {before, after};
  Chart s;
  s.id = "chart-eval-improved";
  s.x_label = "step";
  s.y_label = "validation lines improved (%)";
  s.width = kHalfChart;
  s.height = 240;
  s.y_scale = Chart::YScale::Linear;
  s.y_min = 0, s.y_max = 100;
  s.series = {improved};
  std::string o = "<h2>Evaluation on the validation split</h2>";
  if (m.eval.empty())
    return o + "<p class=\"note\">No evaluation yet (train_step's eval.root is null, or the first evaluation has not "
               "run: it follows every eval.every_epochs epochs and the end of the run).</p>";
  o += "<div class=\"row\"><div class=\"half\">" + render_chart(c) + "</div><div class=\"half\">" + render_chart(s) +
       "</div></div>";
  o += "<p class=\"note\">Mean distance of a line's points to the true line, for the perturbed input and the model's "
       "refinement of it; and the share of lines the refinement brought closer.</p>";
  o += "<table class=\"data\"><tr><th>step</th><th>epoch</th><th>lines</th><th>MSE</th><th>error of the input (m)</th>"
       "<th>error refined (m)</th><th>improved</th></tr>";
  for (const auto& r : m.eval)
    o += "<tr><td>" + std::to_string(r.step) + "</td><td>" + std::to_string(r.epoch + 1) + "</td><td>" +
         std::to_string(r.lines) + "</td><td>" + g6(r.mse) + "</td><td>" + g6(r.err_before_m) + "</td><td>" +
         g6(r.err_after_m) + "</td><td>" + fmt("%.1f%%", 100 * r.improved) + "</td></tr>";
  return o + "</table>";
}

std::string stages_section(const RunFacts& f) {
  std::string o = "<h2>Where the time went</h2>";
  if (f.stages.empty()) return o + "<p class=\"note\">The run has not ended yet: the stage table is written at its end.</p>";
  size_t top = 0;
  for (size_t i = 0; i < f.stages.size(); ++i)
    if (f.stages[i].utilization > f.stages[top].utilization) top = i;
  const int row = 24, label_w = 230, bar_w = 340, W = kWideChart, H = row * (int)f.stages.size() + 30;
  std::ostringstream s;
  s << "<svg id=\"chart-stages\" class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H
    << "\" viewBox=\"0 0 " << W << " " << H << "\">";
  for (int pct : {0, 25, 50, 75, 100}) {
    const double x = label_w + bar_w * pct / 100.0;
    s << "<line class=\"gridv\" x1=\"" << x << "\" x2=\"" << x << "\" y1=\"0\" y2=\"" << H - 22 << "\"/><text x=\"" << x
      << "\" y=\"" << H - 8 << "\" text-anchor=\"middle\" class=\"tick\">" << pct << "%</text>";
  }
  for (size_t i = 0; i < f.stages.size(); ++i) {
    const auto& st = f.stages[i];
    const double u = std::clamp(st.utilization, 0.0, 1.0);
    const int y = (int)i * row + 4;
    s << "<text x=\"" << label_w - 8 << "\" y=\"" << y + 15 << "\" text-anchor=\"end\">" << html_escape(st.id) << " ("
      << html_escape(st.type) << (st.threads > 1 ? " ×" + std::to_string(st.threads) : "") << ")</text>";
    s << "<rect data-stage=\"" << html_escape(st.id) << "\" x=\"" << label_w << "\" y=\"" << y << "\" width=\""
      << fmt("%.1f", bar_w * u) << "\" height=\"" << row - 6 << "\" fill=\"" << (i == top ? "#d9534f" : "#5b8fc9")
      << "\"/>";
    s << "<text x=\"" << label_w + bar_w + 8 << "\" y=\"" << y + 15 << "\">" << fmt("%.0f%%", 100 * st.utilization)
      << " busy · " << fmt("%.2f s", st.busy_s) << " · " << st.items_in << " in, " << st.items_out << " out"
      << (st.skipped ? ", " + std::to_string(st.skipped) + " skipped" : "") << "</text>";
  }
  s << "</svg>";
  o += s.str();
  if (!f.bottleneck.empty())
    o += "<p class=\"bottleneck\" data-metric=\"bottleneck\"><b>Bottleneck:</b> " + html_escape(f.bottleneck) + "</p>";
  if (f.ranks > 1)
    o += "<p class=\"note\" data-metric=\"ranks\">Over " + std::to_string(f.ranks) +
         " ranks: items, skipped, busy, idle and held time summed over the ranks; threads: each rank's; busy %: busy "
         "time ÷ (wall time × threads), every rank's added up. The busiest stage is red.</p>";
  else
    o += "<p class=\"note\">Busy %: busy time ÷ (wall time × threads). The busiest stage is red.</p>";
  if (f.cpu.core_s > 0)
    o += "<p data-metric=\"cpu_use\">" +
         html_escape(format_cpu_use(f.cpu, f.ranks, f.stages.empty() ? std::string() : f.stages.back().id)) + "</p>";
  o += "<details><summary>The stage table</summary><table class=\"data\"><tr><th>stage</th><th>type</th><th>threads</th>"
       "<th>items in</th><th>items out</th><th>skipped</th><th>busy s</th><th>busy %</th><th>idle s</th><th>held s</th><th>order s</th><th>tail %</th></tr>";
  for (size_t i = 0; i < f.stages.size(); ++i) {
    const auto& st = f.stages[i];
    o += "<tr><td>" + html_escape(st.id) + "</td><td>" + html_escape(st.type) + "</td><td>" + std::to_string(st.threads) +
         "</td><td>" + std::to_string(st.items_in) + "</td><td>" + std::to_string(st.items_out) + "</td><td>" +
         std::to_string(st.skipped) + "</td><td>" + fmt("%.2f", st.busy_s) + "</td><td>" +
         fmt("%.0f%%", 100 * st.utilization) + "</td><td>" + fmt("%.2f", st.wait_input_s) + "</td><td>" +
         fmt("%.2f", st.wait_output_s) + "</td><td>" + (st.serial && i > 0 ? fmt("%.2f", st.order_wait_s) : "-") +
         "</td><td>" + (st.fork_s > 0 ? fmt("%.0f%%", 100 * st.tail_share()) : "-") + "</td></tr>";
  }
  return o + "</table><p class=\"note\">idle: its threads waited for input; held: the source's next item waited for a "
             "place in in_flight; " + html_escape(kWaitLegend) + ".</p></details>";
}

std::string skips_section(const RunFacts& f) {
  std::string o = "<h2>Skipped items</h2>";
  if (f.wall_s < 0) return o + "<p class=\"note\">Listed when the run ends.</p>";
  if (f.skips_total == 0) return o + "<p data-metric=\"skips_total\">0</p><p class=\"note\">Nothing was skipped.</p>";
  o += "<p><span data-metric=\"skips_total\">" + std::to_string(f.skips_total) + "</span> item(s) skipped" +
       (f.ranks > 1 ? " over " + std::to_string(f.ranks) + " ranks (examples from each, with their rank)" : std::string()) +
       ".</p>";
  o += "<table class=\"data\"><tr><th>stage</th><th>reason (# stands for a number)</th><th>count</th><th>examples</th></tr>";
  for (const auto& g : f.skip_groups) {
    std::string ex;
    for (const auto& e : g.examples)
      ex += "<div>" + (e.rank >= 0 ? "[rank " + std::to_string(e.rank) + "] " : std::string()) + html_escape(e.item) + ": " +
            html_escape(e.reason) + "</div>";
    o += "<tr><td>" + html_escape(g.stage) + "</td><td>" + html_escape(g.pattern) + "</td><td data-skip-count>" +
         std::to_string(g.count) + "</td><td class=\"examples\">" + ex + "</td></tr>";
  }
  return o + "</table>";
}

// One validation line, top-down in the line's frame: the cropped points (grey by intensity),
// the truth, the perturbed input and the refinement, at one scale on both axes.
std::string example_svg(const EvalExample& e, int index) {
  double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY, imax = 0;
  auto grow = [&](const std::vector<float>& v, int stride) {
    for (size_t i = 0; i + 1 < v.size(); i += stride) {
      if (!std::isfinite(v[i]) || !std::isfinite(v[i + 1])) continue;
      x0 = std::min(x0, (double)v[i]), x1 = std::max(x1, (double)v[i]);
      y0 = std::min(y0, (double)v[i + 1]), y1 = std::max(y1, (double)v[i + 1]);
    }
  };
  grow(e.context, 3), grow(e.noisy, 3), grow(e.truth, 3), grow(e.refined, 3);
  for (size_t i = 2; i < e.context.size(); i += 3)
    if (std::isfinite(e.context[i])) imax = std::max(imax, (double)e.context[i]);
  if (!(x1 >= x0)) return "<p>(no finite points)</p>";
  const double pad = 0.03 * std::max({x1 - x0, y1 - y0, 0.1});
  x0 -= pad, x1 += pad, y0 -= pad, y1 += pad;
  const int W = 420;
  const double scale = W / (x1 - x0);
  int H = (int)std::ceil((y1 - y0) * scale);
  if (H < 140) {  // widen the y range so a straight line does not make a sliver of a picture
    const double extra = (140 / scale - (y1 - y0)) / 2;
    y0 -= extra, y1 += extra, H = 140;
  } else if (H > 420) {
    H = 420;
  }
  const double s = std::min(scale, H / (y1 - y0));
  auto X = [&](double x) { return fmt("%.1f", (x - x0) * s); };
  auto Y = [&](double y) { return fmt("%.1f", H - (y - y0) * s); };  // y up, as seen from above
  std::ostringstream o;
  o << "<svg id=\"example-" << index << "\" class=\"example\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W
    << "\" height=\"" << H << "\" viewBox=\"0 0 " << W << " " << H << "\"><rect width=\"" << W << "\" height=\"" << H
    << "\" fill=\"#fbfbfb\"/>";
  o << "<g data-layer=\"points\">";
  for (size_t i = 0; i + 2 < e.context.size(); i += 3) {
    const int grey = imax > 0 ? 190 - (int)(150 * std::clamp(e.context[i + 2] / imax, 0.0, 1.0)) : 140;
    o << "<circle cx=\"" << X(e.context[i]) << "\" cy=\"" << Y(e.context[i + 1]) << "\" r=\"1.3\" fill=\"rgb(" << grey
      << "," << grey << "," << grey << ")\"/>";
  }
  o << "</g>";
  auto line = [&](const std::vector<float>& v, const char* name, const char* color, const char* extra) {
    o << "<polyline data-line=\"" << name << "\" fill=\"none\" stroke=\"" << color << "\" " << extra << " points=\"";
    for (size_t i = 0; i + 2 < v.size(); i += 3) o << (i ? " " : "") << X(v[i]) << "," << Y(v[i + 1]);
    o << "\"/>";
  };
  line(e.truth, "truth", "#2a9d5c", "stroke-width=\"3\" stroke-opacity=\"0.8\"");
  line(e.noisy, "noisy", "#d9822b", "stroke-width=\"2\" stroke-dasharray=\"6 3\"");
  line(e.refined, "refined", "#1f5fa8", "stroke-width=\"2\"");
  // A scale bar of a round length, about a fifth of the picture.
  double bar = std::pow(10, std::floor(std::log10((x1 - x0) / 5)));
  if (bar * s * 5 < W / 5.0) bar *= 5;
  else if (bar * s * 2 < W / 5.0) bar *= 2;
  o << "<line x1=\"10\" x2=\"" << fmt("%.1f", 10 + bar * s) << "\" y1=\"" << H - 10 << "\" y2=\"" << H - 10
    << "\" stroke=\"#000\" stroke-width=\"2\"/><text x=\"10\" y=\"" << H - 15 << "\" class=\"tick\">" << fmt("%g m", bar)
    << "</text></svg>";
  return o.str();
}

std::string examples_section(const RunData& r) {
  std::string o = "<h2>Before and after: validation lines</h2>";
  if (!r.examples || r.examples->lines.empty())
    return o + "<p class=\"note\">No pictures yet: the trainer writes a few validation lines at each evaluation.</p>";
  const auto& ex = *r.examples;
  o += "<p class=\"note\">The model of step " + std::to_string(ex.step) + " (the latest evaluation), on the first " +
       std::to_string(ex.lines.size()) + " lines of the validation split, seen from above in the line's frame "
       "(centred and rotated as the model sees it). <span class=\"key\" style=\"color:#2a9d5c\">━ truth</span> "
       "<span class=\"key\" style=\"color:#d9822b\">╍ perturbed input</span> "
       "<span class=\"key\" style=\"color:#1f5fa8\">━ refined</span> <span class=\"key\">· points around the line "
       "(darker: brighter return)</span></p><div class=\"examples\">";
  for (size_t i = 0; i < ex.lines.size(); ++i) {
    const auto& e = ex.lines[i];
    o += "<figure>" + example_svg(e, (int)i) + "<figcaption>validation scene " + std::to_string(e.scene) + ", line " +
         std::to_string(e.line) + ": mean point error " + fmt("%.3f", e.err_before_m) + " m → " + fmt("%.3f", e.err_after_m) +
         " m</figcaption></figure>";
  }
  return o + "</div>";
}

std::string facts_section(const RunData& r) {
  std::string o = "<h2>Run facts</h2><table class=\"facts\">";
  auto row = [&](const std::string& k, const std::string& v, const std::string& key = "") {
    o += "<tr><th>" + html_escape(k) + "</th><td" + (key.empty() ? "" : " data-metric=\"" + key + "\"") + ">" +
         html_escape(v) + "</td></tr>";
  };
  row("run folder", fs::absolute(r.dir).string());
  row("metrics", r.metrics_path + " (" + std::to_string(r.metrics.lines) + " lines)");
  if (!r.facts) return o + "</table>";
  const RunFacts& f = *r.facts;
  row("status", f.status, "status");
  row("pipeline", f.name + " (" + f.pipeline_path + ")");
  if (!f.command.empty()) row("command", f.command);
  row("started", f.started_utc);
  if (!f.updated_utc.empty()) row("ended", f.updated_utc);
  if (f.ranks > 1) row("ranks", std::to_string(f.ranks) + " (data-parallel: the stage table and skipped items add up every rank's)");
  row("wall time", f.wall_s >= 0 ? duration(f.wall_s) + (f.ranks > 1 ? " (the longest rank's)" : "") : "running", "wall");
  row("peak RSS",
      f.peak_rss_bytes >= 0 ? fmt("%.0f MiB", f.peak_rss_bytes / 1048576.0) + (f.ranks > 1 ? " (the largest process's)" : "")
                            : "at the end",
      "peak_rss");
  row("device", f.device + " -- " + f.device_reason);
  row("seed", std::to_string(f.seed), "seed");
  row("epochs", std::to_string(f.epochs));
  if (!f.error.empty()) row("error", f.error);
  for (const auto& s : f.summaries) row("summary", s);
  o += "</table>";
  o += "<details><summary>Memory plan</summary><pre>" + html_escape(f.memory_plan) + "</pre></details>";
  o += "<details><summary>Versions</summary><pre>" + html_escape(f.versions) + "</pre></details>";
  o += "<details><summary>Resolved pipeline (every default written out)</summary><pre>" +
       html_escape(pretty_json(f.pipeline_json)) + "</pre></details>";
  return o;
}

const char* kStyle = R"(
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;color:#222;margin:0 auto;max-width:900px;padding:12px 16px 40px}
h1{font-size:22px;margin:8px 0 2px}h2{font-size:18px;margin:26px 0 6px;border-bottom:1px solid #ddd}h3{font-size:15px;margin:8px 0 2px}
.sub,.note{color:#666;font-size:12.5px}.note{margin:2px 0 8px}
.cards{display:flex;flex-wrap:wrap;gap:8px;margin:10px 0}.card{border:1px solid #ddd;border-radius:6px;padding:6px 10px;min-width:120px}
.card .label{font-size:12px;color:#666}.card .value{font-size:18px;font-weight:600}
.warn{background:#fff4e5;border:1px solid #f0b36a;border-radius:6px;padding:6px 10px;margin:8px 0}.warn li{font-family:monospace;font-size:12px}
.row{display:flex;gap:20px;flex-wrap:wrap}.half{flex:0 0 430px}
svg.chart text,svg.example text{font-size:11px;fill:#333}svg.chart .axis{font-size:12px;fill:#222}
svg.chart .grid line{stroke:#eee}svg.chart .frame{fill:none;stroke:#999}svg.chart .gridv{stroke:#eee}
table.data,table.facts{border-collapse:collapse;font-size:12.5px;margin:6px 0}table.data td,table.data th,table.facts td,table.facts th{border:1px solid #ddd;padding:2px 6px;text-align:left;vertical-align:top}
table.data td{font-variant-numeric:tabular-nums}td.examples div{font-family:monospace;font-size:11.5px}
.examples{display:flex;flex-wrap:wrap;gap:12px}figure{margin:0}figcaption{font-size:12px;color:#444}svg.example{border:1px solid #ddd}
.key{white-space:nowrap;margin-right:8px}pre{background:#f6f6f6;padding:6px;font-size:11.5px;overflow-x:auto}
.bottleneck{background:#f3f7fc;border-left:4px solid #5b8fc9;padding:4px 8px}
)";

}  // namespace

std::string render_html(const RunData& r) {
  const Metrics& m = r.metrics;
  const bool running = r.facts && r.facts->status == "running";
  std::string title = r.facts && !r.facts->name.empty() ? r.facts->name : fs::path(r.dir).filename().string();
  std::string o = "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>" + html_escape(title) +
                  " -- streamline run report</title>";
  // While the run goes on the page reloads itself, as TensorBoard does.
  if (running) o += "<meta http-equiv=\"refresh\" content=\"30\">";
  o += "<style>" + std::string(kStyle) + "</style></head><body>";
  o += "<h1>" + html_escape(title) + "</h1><div class=\"sub\">streamline run report · " +
       html_escape(fs::absolute(r.dir).string()) + " · " +
       (r.facts ? html_escape(r.facts->status) + (running ? " (this page reloads every 30 s)" : "") : std::string("no run facts")) +
       " · written " + utc_now() + "</div>";

  std::vector<std::string> notes = r.notes;
  for (const auto& p : m.problems) notes.push_back("unreadable metrics line: " + p);
  if (!notes.empty()) {
    o += "<div class=\"warn\" id=\"problems\"><b>Not everything could be read</b> (the report shows the rest):<ul>";
    for (const auto& n : notes) o += "<li>" + html_escape(n) + "</li>";
    o += "</ul></div>";
  }

  // The numbers people look for first.
  o += "<div class=\"cards\">";
  if (!m.train.empty()) {
    const TrainRow& last = m.train.back();
    double best = INFINITY;
    for (const auto& t : m.train)
      if (std::isfinite(t.loss)) best = std::min(best, t.loss);
    o += card("step", std::to_string(last.step), "last_step", "epoch " + std::to_string(last.epoch + 1));
    o += card("loss", g6(last.loss), "last_loss", "lowest " + g6(best));
    o += card("samples/s", g6(last.samples_per_s), "last_samples_per_s", "average since start");
    o += card("time", duration(last.elapsed_s), "last_elapsed", std::to_string(last.samples) + " samples");
  }
  if (!m.eval.empty()) {
    const EvalRow& e = m.eval.back();
    o += card("validation error", g6(e.err_after_m) + " m", "last_eval_after", "input: " + g6(e.err_before_m) + " m");
    o += card("lines improved", fmt("%.1f%%", 100 * e.improved), "last_eval_improved",
              std::to_string(e.lines) + " lines, step " + std::to_string(e.step));
  }
  o += "</div>";

  o += loss_section(m);
  o += "<div class=\"row\">" + lr_section(m, r.facts) + speed_section(m) + "</div>";
  o += eval_section(m);
  o += examples_section(r);
  if (r.facts) o += stages_section(*r.facts) + skips_section(*r.facts);
  o += facts_section(r);
  o += "</body></html>\n";
  return o;
}

std::string write_report(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) fail(dir, "not a folder (expected a run folder: checkpoint.dir of a training run)");
  const std::string path = (fs::path(dir) / "report.html").string();
  write_file_atomic(path, render_html(load_run(dir)));
  return path;
}

}  // namespace sl::report
