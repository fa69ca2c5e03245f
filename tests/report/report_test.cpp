// The run report: its drawing helpers against plain references, the page's content against the
// files it was made from (short and long runs, cut metrics), and the page rendered by a real
// browser (Debian's chromium, headless) into a PNG that is checked.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "graph/atomic_file.h"
#include "graph/error.h"
#include "report/charts.h"
#include "report/report.h"
#include "tests/apps/cli_util.h"
#include "tests/formats/clouds/io_test_util.h"
#include "tests/report/browser_util.h"

namespace sl::report {
namespace {

namespace fs = std::filesystem;

// ---- helpers: the page as text --------------------------------------------------------------

// The element <svg id="id" ...>...</svg> of the page.
std::string svg_by_id(const std::string& html, const std::string& id) {
  const size_t a = html.find("<svg id=\"" + id + "\"");
  if (a == std::string::npos) return "";
  const size_t b = html.find("</svg>", a);
  return html.substr(a, b - a);
}

// Points in the `points` attribute of the polyline with data-series=`series` in `svg`; -1 when
// there is no such polyline.
int polyline_points(const std::string& svg, const std::string& series) {
  const size_t a = svg.find("data-series=\"" + series + "\"");
  if (a == std::string::npos) return -1;
  const size_t p = svg.find("points=\"", a) + 8;
  const size_t e = svg.find('"', p);
  int n = 0;
  bool in = false;
  for (size_t i = p; i < e; ++i) {
    const bool sp = svg[i] == ' ';
    if (!sp && !in) ++n;
    in = !sp;
  }
  return n;
}

// Text of the element carrying data-metric="key".
std::string metric(const std::string& html, const std::string& key) {
  const size_t a = html.find("data-metric=\"" + key + "\"");
  if (a == std::string::npos) return "<missing " + key + ">";
  const size_t s = html.find('>', a) + 1;
  return html.substr(s, html.find('<', s) - s);
}

size_t count(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (size_t p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + 1)) ++n;
  return n;
}

// The raw text of `key`'s value on a JSON line, as the file spells it.
std::string raw_value(const std::string& line, const std::string& key) {
  const size_t a = line.find("\"" + key + "\":") + key.size() + 3;
  return line.substr(a, line.find_first_of(",}", a) - a);
}

// ---- helpers: a run folder ------------------------------------------------------------------

struct FakeRun {
  std::vector<std::string> train_lines, eval_lines;
};

// `steps` logged training steps with losses spread over `decades` decades (random, never 0),
// and an evaluation every `eval_every` steps; written as the trainer writes them.
FakeRun write_metrics(const std::string& path, int steps, double decades, int eval_every, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  FakeRun r;
  std::string text;
  char b[512];
  for (int s = 1; s <= steps; ++s) {
    const double loss = 0.05 * std::pow(10, -decades * u(rng)) + 1e-7;
    std::snprintf(b, sizeof b,
                  "{\"type\":\"train\",\"step\":%d,\"epoch\":%d,\"loss\":%.6g,\"loss_avg\":%.6g,\"samples\":%d,"
                  "\"samples_per_s\":%.1f,\"elapsed_s\":%.2f,\"lr\":%.6g}",
                  s, s / 1000, loss, loss * 1.1, s * 64, 300 + 100 * u(rng), s * 0.2, 0.003 * (1 - 0.5 * s / steps));
    r.train_lines.push_back(b);
    text += std::string(b) + "\n";
    if (s % eval_every == 0) {
      const double before = 0.25 + 0.1 * u(rng);
      std::snprintf(b, sizeof b,
                    "{\"type\":\"eval\",\"step\":%d,\"epoch\":%d,\"lines\":336,\"mse\":%.6g,\"err_before_m\":%.6g,"
                    "\"err_after_m\":%.6g,\"improved\":%.4f}",
                    s, s / 1000, 0.04 * u(rng) + 0.01, before, before * (0.5 + 0.4 * u(rng)), 0.5 + 0.4 * u(rng));
      r.eval_lines.push_back(b);
      text += std::string(b) + "\n";
    }
  }
  write_file_atomic(path, text);
  return r;
}

RunFacts fake_facts(const std::string& metrics) {
  RunFacts f;
  f.status = "finished";
  f.name = "line_refine_train";
  f.pipeline_path = "pipelines/line_refine_train.json";
  f.started_utc = "2026-11-23T09:00:00Z";
  f.updated_utc = "2026-11-23T09:10:00Z";
  f.seed = 1234;
  f.epochs = 3;
  f.device = "cpu";
  f.device_reason = "no GPU here";
  f.versions = "streamline test";
  f.memory_plan = "params 1.1 MiB";
  f.metrics_path = metrics;
  f.pipeline_json = R"({"name":"x","stages":[{"id":"train","type":"train_step","params":{"optimizer":{"lr":0.003}}}]})";
  f.wall_s = 612.5;
  f.peak_rss_bytes = 412.0 * 1048576;
  f.bottleneck = "'train' (the sink) is busy 97% of the run.";
  StageReport a, t;
  a.id = "crop", a.type = "crop_polyline", a.threads = 2, a.utilization = 0.31, a.busy_s = 380;
  t.id = "train", t.type = "train_step", t.utilization = 0.97, t.busy_s = 594;
  f.stages = {a, t};
  f.skip_groups = group_skips({{"crop", "scene_0001 line 0", "4 points within 2.00 m of the noisy_line (min_points 32)"},
             {"crop", "scene_0002 line 3", "17 points within 2.00 m of the noisy_line (min_points 32)"},
             {"read", "scene_0005", "bad header"},
             {"crop", "scene_0009 line 1", "8 points within 2.00 m of the noisy_line (min_points 32)"},
             {"crop", "scene_0010 line 2", "9 points within 2.00 m of the noisy_line (min_points 32)"}});
  f.skips_total = 5;
  return f;
}

EvalExamples fake_examples(uint32_t seed, int lines) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> n(0.f, 0.3f);
  EvalExamples e;
  e.step = 3000, e.epoch = 2;
  for (int k = 0; k < lines; ++k) {
    std::vector<float> ctx(64 * 4), noisy(8 * 3), pred(8 * 3), truth(8 * 3);
    for (int i = 0; i < 64; ++i) ctx[i * 4] = -5 + 10 * i / 63.f, ctx[i * 4 + 1] = n(rng), ctx[i * 4 + 2] = 0.1f, ctx[i * 4 + 3] = 1 + i;
    for (int i = 0; i < 8; ++i) {
      truth[i * 3] = -5 + 10 * i / 7.f, truth[i * 3 + 1] = 0.1f * k, truth[i * 3 + 2] = 0;
      for (int c = 0; c < 3; ++c) noisy[i * 3 + c] = truth[i * 3 + c] + n(rng), pred[i * 3 + c] = 0.7f * (truth[i * 3 + c] - noisy[i * 3 + c]);
    }
    e.lines.push_back(make_eval_example(ctx.data(), 64, 4, noisy.data(), pred.data(), truth.data(), 8, 3, k));
  }
  return e;
}

void write_run(const test::TempDir& dir, const FakeRun&, int examples) {
  write_file_atomic(dir.path("run.json"), to_json(fake_facts(dir.path("metrics.jsonl"))));
  write_file_atomic(dir.path("eval_examples.json"), to_json(fake_examples(7, examples)));
}

// ---- drawing helpers against plain references ------------------------------------------------

TEST(Charts, DownsampleKeepsEachPixelColumnsMinAndMaxInOrderForSizes1To100000) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> u(-3, 3);
  for (int n : {1, 2, 10, 1584, 1585, 5000, 100000}) {
    const int buckets = 792;
    std::vector<XY> pts;
    for (int i = 0; i < n; ++i) pts.push_back({(double)(i + 1), u(rng)});
    const auto out = downsample_minmax(pts, buckets);
    if (n <= 2 * buckets) {
      ASSERT_EQ(out.size(), (size_t)n) << n;
      continue;
    }
    // Reference: every column's min and max by a direct scan over each column.
    std::vector<XY> ref;
    const double x0 = pts.front().x, span = pts.back().x - x0;
    for (int b = 0; b < buckets; ++b) {
      int lo = -1, hi = -1;
      for (int i = 0; i < n; ++i) {
        if (std::min(buckets - 1, (int)((pts[i].x - x0) / span * buckets)) != b) continue;
        if (lo < 0 || pts[i].y < pts[lo].y) lo = i;
        if (hi < 0 || pts[i].y > pts[hi].y) hi = i;
      }
      if (lo < 0) continue;
      ref.push_back(pts[std::min(lo, hi)]);
      if (lo != hi) ref.push_back(pts[std::max(lo, hi)]);
    }
    ASSERT_EQ(out.size(), ref.size()) << n;
    for (size_t i = 0; i < ref.size(); ++i) ASSERT_TRUE(out[i].x == ref[i].x && out[i].y == ref[i].y) << n << " at " << i;
    if (n >= 5000) {
      EXPECT_EQ(out.size(), (size_t)2 * buckets) << "every column holds several random points";
    }
    EXPECT_EQ(std::min_element(out.begin(), out.end(), [](auto& a, auto& b) { return a.y < b.y; })->y,
              std::min_element(pts.begin(), pts.end(), [](auto& a, auto& b) { return a.y < b.y; })->y);
  }
}

TEST(Charts, DownsampleDropsNonFinitePointsOnly) {
  std::vector<XY> pts = {{1, 0.5}, {2, NAN}, {3, 0.25}, {INFINITY, 1}, {5, 0.125}};
  const auto out = downsample_minmax(pts, 10);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[1].y, 0.25);
}

TEST(Charts, SmoothingIsTensorBoardsDebiasedEmaOnRandomValues) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> u(0.1, 2);
  std::vector<double> y(200);
  for (auto& v : y) v = u(rng);
  const auto s = smooth_ema(y, 0.6);
  double last = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    last = 0.6 * last + 0.4 * y[i];
    EXPECT_NEAR(s[i], last / (1 - std::pow(0.6, (double)(i + 1))), 1e-12) << i;
  }
  EXPECT_DOUBLE_EQ(s[0], y[0]);
}

TEST(Charts, TicksAreRoundNumbersInsideTheRangeLinearAndLog) {
  EXPECT_EQ(nice_ticks(0, 0.97, 5), (std::vector<double>{0, 0.2, 0.4, 0.6, 0.8}));
  EXPECT_EQ(nice_ticks(13, 100000, 4), (std::vector<double>{20000, 40000, 60000, 80000, 100000}));
  const auto l = log_ticks(1e-4, 1);
  ASSERT_EQ(l.size(), 5u);
  for (int i = 0; i < 5; ++i) EXPECT_NEAR(l[i], std::pow(10, i - 4), 1e-15);
  const auto f = log_ticks(0.01, 1);  // two decades: 1, 2, 5 of each
  ASSERT_EQ(f.size(), 7u);
  EXPECT_NEAR(f[1], 0.02, 1e-15);
  EXPECT_NEAR(f[5], 0.5, 1e-15);
  EXPECT_EQ(tick_label(20000), "20k");
  EXPECT_EQ(tick_label(2.5e6), "2.5M");
  EXPECT_EQ(tick_label(0.001), "0.001");
}

// ---- the page against the files -------------------------------------------------------------

TEST(Report, LongRunOf100000StepsDrawsTwoPointsPerPixelOnALogAxisAndShowsTheFileNumbers) {
  test::TempDir dir;
  const FakeRun run = write_metrics(dir.path("metrics.jsonl"), 100000, 3, 5000, 21);
  write_run(dir, run, 4);
  const std::string html = read_file(write_report(dir.path("")));
  ASSERT_EQ(plot_width(kWideChart), 792);
  const std::string loss = svg_by_id(html, "chart-loss");
  EXPECT_EQ(polyline_points(loss, "loss"), 2 * plot_width(kWideChart));
  EXPECT_EQ(polyline_points(loss, "smoothed (EMA 0.998)"), 2 * plot_width(kWideChart));
  EXPECT_NE(loss.find("data-n=\"100000\""), std::string::npos) << "the data keeps every step";
  EXPECT_NE(loss.find("(log scale)"), std::string::npos) << "losses span three decades";
  EXPECT_EQ(polyline_points(svg_by_id(html, "chart-lr"), "learning rate"), 2 * plot_width(kHalfChart));
  EXPECT_NE(svg_by_id(html, "chart-speed").find("time since the run started (h)"), std::string::npos) << "5.6 hours";
  EXPECT_EQ(polyline_points(svg_by_id(html, "chart-eval-error"), "refined"), (int)run.eval_lines.size());
  // The numbers on the page are those of the file, digit for digit.
  EXPECT_EQ(metric(html, "last_step"), "100000");
  EXPECT_EQ(metric(html, "last_loss"), raw_value(run.train_lines.back(), "loss"));
  EXPECT_EQ(metric(html, "last_samples_per_s"), raw_value(run.train_lines.back(), "samples_per_s"));
  EXPECT_EQ(metric(html, "last_eval_after"), raw_value(run.eval_lines.back(), "err_after_m") + " m");
  EXPECT_EQ(metric(html, "seed"), "1234");
  EXPECT_EQ(metric(html, "peak_rss"), "412 MiB");
  EXPECT_EQ(metric(html, "skips_total"), "5");
  // Skips grouped by stage and reason with the numbers masked: 4 crop, 1 read.
  EXPECT_NE(html.find("# points within # m of the noisy_line (min_points #)"), std::string::npos);
  EXPECT_NE(html.find("<td data-skip-count>4</td>"), std::string::npos);
  EXPECT_EQ(count(html, "scene_0010 line 2"), 0u) << "three examples per group";
  EXPECT_NE(html.find("<td data-skip-count>1</td>"), std::string::npos);
  EXPECT_EQ(count(html, "<rect data-stage="), 2u);
  EXPECT_EQ(count(html, "class=\"example\""), 4u);
  EXPECT_EQ(count(html, "data-line=\"refined\""), 4u);
  EXPECT_EQ(html.find("id=\"problems\""), std::string::npos);
  // Self-contained: nothing is fetched.
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("src="), std::string::npos);
  EXPECT_EQ(html.find("href=\"http"), std::string::npos);
}

TEST(Report, TenStepRunDrawsEveryPointOnALinearAxis) {
  test::TempDir dir;
  const FakeRun run = write_metrics(dir.path("metrics.jsonl"), 10, 0.2, 5, 5);
  write_run(dir, run, 2);
  const std::string html = read_file(write_report(dir.path("")));
  const std::string loss = svg_by_id(html, "chart-loss");
  EXPECT_EQ(polyline_points(loss, "loss"), 10);
  EXPECT_EQ(polyline_points(loss, "smoothed (EMA 0.6)"), 10);
  EXPECT_EQ(loss.find("(log scale)"), std::string::npos);
  EXPECT_EQ(polyline_points(svg_by_id(html, "chart-eval-improved"), "lines improved"), 2);
  EXPECT_EQ(count(svg_by_id(html, "chart-eval-improved"), "<circle"), 2u);
  // Throughput over each interval: one point fewer than the logged steps.
  EXPECT_EQ(polyline_points(svg_by_id(html, "chart-speed"), "over the last interval"), 9);
  EXPECT_NE(svg_by_id(html, "chart-speed").find("time since the run started (s)"), std::string::npos);
  EXPECT_EQ(metric(html, "last_loss"), raw_value(run.train_lines.back(), "loss"));
  EXPECT_EQ(count(html, "class=\"example\""), 2u);
}

TEST(Report, CutAndGarbledMetricsLinesAreListedAndTheRestIsDrawn) {
  test::TempDir dir;
  const FakeRun run = write_metrics(dir.path("full.jsonl"), 30, 1, 10, 9);
  std::string text;
  for (int i = 0; i < 20; ++i) text += run.train_lines[i] + "\n";
  text += "garbage in the middle\n";
  for (int i = 20; i < 29; ++i) text += run.train_lines[i] + "\n";
  text += run.train_lines[29].substr(0, run.train_lines[29].size() / 2);  // killed mid-write
  write_file_atomic(dir.path("metrics.jsonl"), text);
  const Metrics m = read_metrics(dir.path("metrics.jsonl"));
  EXPECT_EQ(m.train.size(), 29u);
  EXPECT_EQ(m.lines, 31);
  ASSERT_EQ(m.problems.size(), 2u);
  EXPECT_NE(m.problems[0].find("metrics.jsonl:21: "), std::string::npos) << m.problems[0];
  EXPECT_EQ(m.problems[0].find("cut short"), std::string::npos);
  EXPECT_NE(m.problems[1].find("metrics.jsonl:31: "), std::string::npos) << m.problems[1];
  EXPECT_NE(m.problems[1].find("cut short"), std::string::npos) << m.problems[1];

  const std::string html = read_file(write_report(dir.path("")));
  EXPECT_NE(html.find("id=\"problems\""), std::string::npos);
  EXPECT_NE(html.find("metrics.jsonl:31: "), std::string::npos);
  EXPECT_NE(html.find("run.json not found"), std::string::npos);
  EXPECT_EQ(polyline_points(svg_by_id(html, "chart-loss"), "loss"), 29);
  EXPECT_EQ(metric(html, "last_loss"), raw_value(run.train_lines[28], "loss"));
}

TEST(Report, ResumedRunsLaterLinesSupersedeTheInterruptedRunsFromTheCheckpointOn) {
  test::TempDir dir;
  const FakeRun a = write_metrics(dir.path("a.jsonl"), 30, 1, 10, 1), b = write_metrics(dir.path("b.jsonl"), 40, 1, 10, 2);
  // Interrupted after step 30 (checkpoint at 20), resumed from 20: steps 21..40 logged again,
  // with the resumed process's own clock and sample count.
  std::string text;
  for (int i = 0; i < 30; ++i) text += a.train_lines[i] + "\n" + (i % 10 == 9 ? a.eval_lines[i / 10] + "\n" : "");
  for (int i = 20; i < 40; ++i) {
    std::string l = b.train_lines[i];
    const std::string el = raw_value(l, "elapsed_s"), sa = raw_value(l, "samples");
    l.replace(l.find("\"elapsed_s\":" + el), 12 + el.size(), "\"elapsed_s\":" + std::to_string(0.2 * (i - 19)));
    l.replace(l.find("\"samples\":" + sa), 10 + sa.size(), "\"samples\":" + std::to_string(64 * (i - 19)));
    text += l + "\n" + (i % 10 == 9 ? b.eval_lines[i / 10] + "\n" : "");
  }
  write_file_atomic(dir.path("metrics.jsonl"), text);
  const RunData r = load_run(dir.path(""));
  ASSERT_EQ(r.metrics.train.size(), 40u);
  for (int i = 0; i < 40; ++i) ASSERT_EQ(r.metrics.train[i].step, i + 1);
  EXPECT_EQ(r.metrics.train[19].loss, read_metrics(dir.path("a.jsonl")).train[19].loss);
  EXPECT_EQ(r.metrics.train[20].loss, read_metrics(dir.path("b.jsonl")).train[20].loss);
  ASSERT_EQ(r.metrics.eval.size(), 4u);  // a's 10 and 20, b's 30 and 40 (a's 30 superseded)
  EXPECT_EQ(r.metrics.eval[2].err_after_m, read_metrics(dir.path("b.jsonl")).eval[2].err_after_m);
  bool said = false;
  for (const auto& n : r.notes) said |= n.find("resumed at step 21") != std::string::npos;
  EXPECT_TRUE(said);
  const std::string html = render_html(r);
  EXPECT_EQ(polyline_points(svg_by_id(html, "chart-loss"), "loss"), 40);
  // Throughput: 39 intervals but the one across the restart.
  EXPECT_EQ(polyline_points(svg_by_id(html, "chart-speed"), "over the last interval"), 38);
}

TEST(Report, ASingleLoggedStepIsADot) {
  Chart c;
  c.id = "one";
  c.series = {Series{"loss", "#000", {{10, 0.5}}}};
  const std::string svg = render_chart(c);
  EXPECT_EQ(polyline_points(svg, "loss"), 1);
  EXPECT_EQ(count(svg, "<circle"), 1u);
}

TEST(Report, BadRunJsonAndExamplesAreNotesAndAMissingFolderIsAnErrorNamingIt) {
  test::TempDir dir;
  write_metrics(dir.path("metrics.jsonl"), 5, 1, 100, 2);
  write_file_atomic(dir.path("run.json"), "{\"status\": \"runn");
  write_file_atomic(dir.path("eval_examples.json"), "{\"lines\":[{\"context_xyi\":[1,2],\"noisy\":[],\"refined\":[],\"truth\":[]}]}");
  const RunData r = load_run(dir.path(""));
  ASSERT_EQ(r.notes.size(), 2u);
  EXPECT_NE(r.notes[0].find("run.json: not a JSON object"), std::string::npos) << r.notes[0];
  EXPECT_NE(r.notes[1].find("/lines/0: 'context_xyi' has 2 numbers"), std::string::npos) << r.notes[1];
  EXPECT_EQ(r.metrics.train.size(), 5u);
  try {
    write_report(dir.path("no_such_run"));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no_such_run: not a folder"), std::string::npos) << e.what();
  }
}

// What a run folder names is read only when it is a regular file of sane lines: a tampered
// run.json naming /dev/zero (which never ends) as the metrics, a folder or a FIFO (which may
// never be written) in place of the examples, and a line of over 16 MiB end as problems, not as
// a hang or the memory filled.
TEST(Report, DevicesPipesAndEndlessLinesAreProblemsNotAHang) {
  test::TempDir dir;
  {
    const Metrics m = read_metrics("/dev/zero");
    ASSERT_EQ(m.problems.size(), 1u);
    EXPECT_NE(m.problems[0].find("/dev/zero: not a regular file"), std::string::npos) << m.problems[0];
  }
  const FakeRun run = write_metrics(dir.path("good.jsonl"), 3, 1, 100, 4);
  std::string text = run.train_lines[0] + "\n" + std::string((size_t(16) << 20) + 10, 'x') + "\n" + run.train_lines[1] + "\n";
  write_file_atomic(dir.path("metrics.jsonl"), text);
  const Metrics m = read_metrics(dir.path("metrics.jsonl"));
  EXPECT_EQ(m.train.size(), 2u);
  ASSERT_EQ(m.problems.size(), 1u);
  EXPECT_NE(m.problems[0].find("metrics.jsonl:2: a line of more than 16777216 bytes"), std::string::npos) << m.problems[0];

  RunFacts f;
  f.metrics_path = "/dev/zero";
  write_file_atomic(dir.path("run.json"), to_json(f));
  ASSERT_EQ(::mkfifo(dir.path("eval_examples.json").c_str(), 0600), 0);
  const RunData r = load_run(dir.path(""));
  EXPECT_EQ(r.metrics_path, "/dev/zero");
  ASSERT_EQ(r.metrics.problems.size(), 1u);
  bool pipe_said = false;
  for (const auto& note : r.notes) pipe_said |= note.find("eval_examples.json: not a regular file") != std::string::npos;
  EXPECT_TRUE(pipe_said);
}

TEST(Report, RunFactsAndEvalExamplesRoundTripThroughTheirFiles) {
  const RunFacts f = fake_facts("m.jsonl");
  const RunFacts g = parse_run_facts(to_json(f), "run.json");
  EXPECT_EQ(g.seed, f.seed);
  EXPECT_EQ(g.wall_s, f.wall_s);
  EXPECT_EQ(g.pipeline_json, f.pipeline_json);
  ASSERT_EQ(g.stages.size(), 2u);
  EXPECT_EQ(g.stages[1].utilization, 0.97);
  ASSERT_EQ(g.skip_groups.size(), 2u);
  EXPECT_EQ(g.skip_groups[0].count, 4);
  EXPECT_EQ(g.skip_groups[0].pattern, "# points within # m of the noisy_line (min_points #)");
  ASSERT_EQ(g.skip_groups[0].examples.size(), kSkipExamples);
  EXPECT_EQ(g.skip_groups[0].examples[2].item, "scene_0009 line 1");
  EXPECT_EQ(g.skip_groups[1].examples[0].reason, "bad header");
  const EvalExamples e = fake_examples(4, 3);
  const EvalExamples h = parse_eval_examples(to_json(e), "x.json");
  ASSERT_EQ(h.lines.size(), 3u);
  EXPECT_EQ(h.step, 3000);
  EXPECT_EQ(h.lines[2].line, 2);
  ASSERT_EQ(h.lines[1].refined.size(), 24u);
  for (size_t i = 0; i < 24; ++i) EXPECT_NEAR(h.lines[1].refined[i], e.lines[1].refined[i], 1e-4 * (1 + std::abs(e.lines[1].refined[i])));
  EXPECT_NEAR(h.lines[0].err_after_m, e.lines[0].err_after_m, 1e-5);
  EXPECT_LT(e.lines[0].err_after_m, e.lines[0].err_before_m) << "the fake prediction moves 70% of the way to the truth";
}

// ---- in a real browser -----------------------------------------------------------------------

TEST(ReportBrowser, ChromiumRendersTheLongRunPageToANonTrivialPngAndParsesEveryChart) {
  const std::string chromium = test::find_chromium();
  if (chromium.empty()) GTEST_SKIP() << "chromium is not installed (scripts/setup installs Debian's chromium)";
  test::TempDir dir;
  const FakeRun run = write_metrics(dir.path("metrics.jsonl"), 100000, 3, 5000, 21);
  write_run(dir, run, 4);
  const std::string page = write_report(dir.path(""));
  const std::string html = read_file(page);
  const int W = 940, H = 2600;
  const std::string flags = " --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --hide-scrollbars --user-data-dir='" +
                            dir.path("profile") + "' ";
  const std::string png = dir.path("shot.png"), dom = dir.path("dom.html");
  std::string cmd = chromium + flags + "--window-size=" + std::to_string(W) + "," + std::to_string(H) +
                    " --screenshot='" + png + "' 'file://" + page + "' >'" + dir.path("log.txt") + "' 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << read_file(dir.path("log.txt"));
  cmd = chromium + flags + "--dump-dom 'file://" + page + "' >'" + dom + "' 2>'" + dir.path("log2.txt") + "'";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << read_file(dir.path("log2.txt"));

  // The browser parsed the page as we wrote it: the same SVG elements, the same numbers.
  const std::string d = read_file(dom);
  EXPECT_EQ(count(d, "<polyline"), count(html, "<polyline"));
  EXPECT_EQ(count(d, "<svg"), count(html, "<svg"));
  EXPECT_EQ(polyline_points(svg_by_id(d, "chart-loss"), "loss"), 2 * plot_width(kWideChart));
  EXPECT_EQ(metric(d, "last_loss"), raw_value(run.train_lines.back(), "loss"));

  const test::RgbImage img = test::read_png_rgb(png);
  ASSERT_TRUE(img.error.empty()) << img.error;
  const std::vector<uint8_t>& px = img.px;
  EXPECT_EQ(img.width, W);
  EXPECT_EQ(img.height, H);
  // Ink on the page, and the charts' colours: the loss blue and the eval orange are drawn.
  size_t ink = 0;
  std::set<uint32_t> colours;
  bool loss_blue = false, eval_orange = false;
  for (size_t i = 0; i + 2 < px.size(); i += 3) {
    const int r = px[i], g = px[i + 1], b = px[i + 2];
    ink += r + g + b < 600;
    colours.insert(r << 16 | g << 8 | b);
    loss_blue |= std::abs(r - 0x1f) < 12 && std::abs(g - 0x5f) < 12 && std::abs(b - 0xa8) < 12;
    eval_orange |= std::abs(r - 0xd9) < 12 && std::abs(g - 0x82) < 12 && std::abs(b - 0x2b) < 12;
  }
  EXPECT_GT(ink, (size_t)W * H / 50) << "a mostly blank page";
  EXPECT_GT(colours.size(), 50u);
  EXPECT_TRUE(loss_blue);
  EXPECT_TRUE(eval_orange);
}


// ---- from a real training run ----------------------------------------------------------------

namespace cli = test;  // run_cli, q: tests/apps/cli_util.h

// A tiny model on a tiny dataset (a few seconds): the run leaves run.json, eval_examples.json and
// a report whose numbers are the run's; `streamline report` redoes it after the metrics file is
// cut mid-line, and names a folder that does not exist.
TEST(ReportCli, TrainingRunWritesTheReportAndReportCommandSurvivesACutMetricsFile) {
  using cli::q;
  test::TempDir dir;
  const std::string data = dir.path("ds"), ckpt = dir.path("run");
  ASSERT_EQ(cli::run_cli(dir, "gen-data " + q(data) + " --seed 4 --train 2 --val 1").code, 0);
  auto r = cli::run_cli(dir, "run " + q(std::string(SL_SOURCE_DIR) + "/pipelines/line_refine_train.json") +
                                 " --set scan.root=" + q(data + "/train") + " --set train.eval.root=" + q(data + "/val") +
                                 " --set epochs=2 --set train.eval.every_epochs=1 --set train.checkpoint.every_steps=3"
                                 " --set train.log.every_steps=1 --set train.checkpoint.dir=" + q(ckpt) +
                                 " --set 'train.model.encoder=[8,8,16]' --set 'train.model.line_mlp=[8,8]'"
                                 " --set 'train.model.regressor=[16,8]' --set resample.points=64 --set perturb.points=8"
                                 " --set batch.size=8 -q");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const std::string page = ckpt + "/report.html";
  EXPECT_NE(r.out.find("report: " + fs::absolute(page).string()), std::string::npos) << r.out;
  const RunFacts f = parse_run_facts(read_file(ckpt + "/run.json"), "run.json");
  EXPECT_EQ(f.status, "finished");
  EXPECT_EQ(f.seed, 42u);
  EXPECT_EQ(f.stages.size(), 11u);
  int64_t grouped = 0, by_stage = 0;
  for (const auto& g : f.skip_groups) grouped += g.count;
  for (const auto& st : f.stages) by_stage += st.skipped;
  EXPECT_EQ(grouped, f.skips_total);
  EXPECT_EQ(by_stage, f.skips_total);
  const EvalExamples ex = parse_eval_examples(read_file(ckpt + "/eval_examples.json"), "eval_examples.json");
  ASSERT_GE(ex.lines.size(), 1u);
  EXPECT_LE(ex.lines.size(), kReportExamples);
  std::set<std::pair<int, int>> distinct;
  for (const auto& e : ex.lines) {
    distinct.insert({e.scene, e.line});
    EXPECT_EQ(e.context.size(), 64u * 3);
    EXPECT_EQ(e.truth.size(), 8u * 3);
    EXPECT_GT(e.err_before_m, 0);
    EXPECT_TRUE(std::isfinite(e.err_after_m));
  }
  EXPECT_EQ(distinct.size(), ex.lines.size()) << "one example per validation line";

  std::vector<std::string> lines;
  {
    std::string text = read_file(ckpt + "/metrics.jsonl"), line;
    for (char c : text)
      if (c == '\n') lines.push_back(line), line.clear();
      else line += c;
  }
  std::string last_train, last_eval;
  for (const auto& l : lines) (l.find("\"type\":\"train\"") != std::string::npos ? last_train : last_eval) = l;
  ASSERT_FALSE(last_train.empty());
  ASSERT_FALSE(last_eval.empty());
  EXPECT_NE(last_train.find("\"lr\":0.003"), std::string::npos) << last_train;
  std::string html = read_file(page);
  EXPECT_EQ(metric(html, "status"), "finished");
  EXPECT_EQ(metric(html, "last_loss"), raw_value(last_train, "loss"));
  EXPECT_EQ(metric(html, "last_eval_after"), raw_value(last_eval, "err_after_m") + " m");
  EXPECT_EQ(count(html, "<rect data-stage="), 11u);
  EXPECT_EQ(count(html, "class=\"example\""), ex.lines.size());
  EXPECT_EQ(polyline_points(svg_by_id(html, "chart-loss"), "loss"), (int)(lines.size() - (size_t)count(read_file(ckpt + "/metrics.jsonl"), "\"eval\"")));
  EXPECT_NE(html.find("Bottleneck:"), std::string::npos);

  // Killed mid-write: the last line cut in half.
  std::string cut;
  for (size_t i = 0; i + 1 < lines.size(); ++i) cut += lines[i] + "\n";
  cut += lines.back().substr(0, lines.back().size() / 2);
  write_file_atomic(ckpt + "/metrics.jsonl", cut);
  r = cli::run_cli(dir, "report " + q(ckpt));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, fs::absolute(page).string() + "\n");
  EXPECT_NE(r.err.find("1 unreadable: " + ckpt + "/metrics.jsonl:" + std::to_string(lines.size()) + ": "), std::string::npos)
      << r.err;
  html = read_file(page);
  EXPECT_NE(html.find("id=\"problems\""), std::string::npos);
  EXPECT_NE(html.find("cut short"), std::string::npos);

  r = cli::run_cli(dir, "report " + q(dir.path("nothing_here")));
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("nothing_here: not a folder"), std::string::npos) << r.err;
  r = cli::run_cli(dir, "report " + q(data));
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find(data + ": not a run folder: no metrics.jsonl and no run.json"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(data + "/report.html"));
}
}  // namespace
}  // namespace sl::report
