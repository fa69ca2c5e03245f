// The end-of-run figures of a data-parallel run added up over its ranks (graph/run_totals.h),
// column by column, against sums computed here from random per-rank figures; and the one-process
// summary text, which must not change. The runs themselves under mpirun: tests/dist/dist_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "graph/error.h"
#include "graph/run_totals.h"

namespace sl {
namespace {

const char* kIds[] = {"scan", "read", "crop", "batch", "train"};

// One rank's result as run_pipeline makes it, with random figures (never zeros).
RunResult random_rank(std::mt19937& rng, int rank) {
  std::uniform_int_distribution<int64_t> count(1, 5000);
  std::uniform_real_distribution<double> secs(0.5, 40.0);
  RunResult r;
  r.wall_s = secs(rng) + 40;
  r.peak_rss_bytes = 1e8 * (1 + rank) + count(rng);
  r.threads = 2;
  r.cpu.cores = 2, r.cpu.affinity_cpus = 2 + rank;
  r.cpu.user_s = secs(rng), r.cpu.system_s = 0.1 * secs(rng), r.cpu.core_s = r.wall_s * r.cpu.cores;
  r.cpu.startup_s = 0.01 * secs(rng), r.cpu.startup_cpu_s = 0.5 * r.cpu.startup_s, r.cpu.startup_core_s = 2 * r.cpu.startup_s;
  for (const char* id : kIds) {
    StageReport s;
    s.id = id, s.type = std::string(id) + "_type";
    s.threads = std::string(id) == "read" || std::string(id) == "crop" ? 2 : 1;
    s.serial = s.threads == 1;
    s.items_in = count(rng), s.items_out = count(rng), s.skipped = count(rng) % 7, s.invocations = count(rng);
    s.busy_s = secs(rng) * s.threads * 0.9, s.wait_input_s = secs(rng), s.wait_output_s = secs(rng);
    s.utilization = s.busy_s / (r.wall_s * s.threads);
    s.order_wait_s = s.serial ? secs(rng) : 0;
    if (!s.serial) s.fork_s = secs(rng), s.fork_tail_s = 0.3 * s.fork_s, s.piece_s = 1.5 * s.fork_s;
    r.stages.push_back(s);
  }
  const int n = 3 + rank * 20;  // rank 1 skips more than the 20 listed
  for (int i = 0; i < n; ++i)
    r.skips.push_back({i % 3 ? "crop" : "read", "scene_" + std::to_string(rank) + "_" + std::to_string(i),
                       std::to_string(count(rng)) + (i % 3 ? " points within 2.00 m" : " bytes \"cut\"\nshort")});
  r.skips_total = (int64_t)r.skips.size();
  r.skip_groups = group_skips(r.skips);
  const double hits = (double)count(rng), peak = 1e6 * (rank + 1.5);
  r.summaries = {"ranks: ...", "read: cache line of rank " + std::to_string(rank), "checkpoint: rank " + std::to_string(rank)};
  r.figure_lines.push_back(RunContext::FigureLine{1, "read.scene_cache", {{"hits", hits}, {"max_peak", peak}},
                                                  [](const std::map<std::string, double>& f, int ranks) {
                                                    return "read: " + std::to_string((long long)f.at("hits")) + " hits, peak " +
                                                           std::to_string((long long)f.at("max_peak")) + " over " +
                                                           std::to_string(ranks);
                                                  }});
  return r;
}

TEST(RunTotals, AShareReadsBackAsItWasWritten) {
  std::mt19937 rng(11);
  const RunResult a = random_rank(rng, 1);
  const RunResult b = parse_rank_share(rank_share_json(a), 1);
  EXPECT_EQ(b.wall_s, a.wall_s);
  EXPECT_EQ(b.peak_rss_bytes, a.peak_rss_bytes);
  EXPECT_EQ(b.threads, a.threads);
  ASSERT_EQ(b.stages.size(), a.stages.size());
  for (size_t i = 0; i < a.stages.size(); ++i) {
    EXPECT_EQ(b.stages[i].id, a.stages[i].id);
    EXPECT_EQ(b.stages[i].type, a.stages[i].type);
    EXPECT_EQ(b.stages[i].threads, a.stages[i].threads);
    EXPECT_EQ(b.stages[i].serial, a.stages[i].serial);
    EXPECT_EQ(b.stages[i].items_in, a.stages[i].items_in);
    EXPECT_EQ(b.stages[i].items_out, a.stages[i].items_out);
    EXPECT_EQ(b.stages[i].skipped, a.stages[i].skipped);
    EXPECT_EQ(b.stages[i].invocations, a.stages[i].invocations);
    EXPECT_EQ(b.stages[i].busy_s, a.stages[i].busy_s) << "doubles travel exactly";
    EXPECT_EQ(b.stages[i].wait_input_s, a.stages[i].wait_input_s);
    EXPECT_EQ(b.stages[i].wait_output_s, a.stages[i].wait_output_s);
    EXPECT_EQ(b.stages[i].order_wait_s, a.stages[i].order_wait_s);
    EXPECT_EQ(b.stages[i].fork_s, a.stages[i].fork_s);
    EXPECT_EQ(b.stages[i].fork_tail_s, a.stages[i].fork_tail_s);
    EXPECT_EQ(b.stages[i].piece_s, a.stages[i].piece_s);
  }
  EXPECT_EQ(b.cpu.user_s, a.cpu.user_s);
  EXPECT_EQ(b.cpu.system_s, a.cpu.system_s);
  EXPECT_EQ(b.cpu.core_s, a.cpu.core_s);
  EXPECT_EQ(b.cpu.cores, a.cpu.cores);
  EXPECT_EQ(b.cpu.affinity_cpus, a.cpu.affinity_cpus);
  EXPECT_EQ(b.cpu.startup_s, a.cpu.startup_s);
  EXPECT_EQ(b.cpu.startup_cpu_s, a.cpu.startup_cpu_s);
  EXPECT_EQ(b.cpu.startup_core_s, a.cpu.startup_core_s);
  EXPECT_EQ(b.skips_total, a.skips_total);
  ASSERT_EQ(b.skips.size(), 20u) << "the first 20 travel, as many as the summary lists";
  for (size_t i = 0; i < b.skips.size(); ++i) {
    EXPECT_EQ(b.skips[i].item, a.skips[i].item);
    EXPECT_EQ(b.skips[i].reason, a.skips[i].reason) << "quotes and newlines survive";
    EXPECT_EQ(b.skips[i].rank, 1);
  }
  ASSERT_EQ(b.skip_groups.size(), a.skip_groups.size());
  for (size_t i = 0; i < a.skip_groups.size(); ++i) {
    EXPECT_EQ(b.skip_groups[i].pattern, a.skip_groups[i].pattern);
    EXPECT_EQ(b.skip_groups[i].count, a.skip_groups[i].count);
    EXPECT_EQ(b.skip_groups[i].examples.size(), a.skip_groups[i].examples.size());
  }
  ASSERT_EQ(b.figure_lines.size(), 1u);
  EXPECT_EQ(b.figure_lines[0].key, "read.scene_cache");
  EXPECT_EQ(b.figure_lines[0].figures, a.figure_lines[0].figures);
}

TEST(RunTotals, AnUnreadableShareIsAnErrorNamingTheRank) {
  for (const std::string bad : {"", "[1]", R"({"wall_s":1})", R"({"wall_s":"1","peak_rss_bytes":0})"}) {
    try {
      parse_rank_share(bad, 3);
      ADD_FAILURE() << "accepted: " << bad;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("rank 3"), std::string::npos) << e.what();
    }
  }
}

TEST(RunTotals, ThreeRanksAddUpColumnByColumn) {
  std::mt19937 rng(5);
  std::vector<RunResult> ranks;
  for (int k = 0; k < 3; ++k) ranks.push_back(random_rank(rng, k));
  std::vector<RunResult> shares{ranks[0]};  // rank 0's own; the others as they arrive over the wire
  for (int k = 1; k < 3; ++k) shares.push_back(parse_rank_share(rank_share_json(ranks[k]), k));
  const RunResult r = combine_rank_shares(shares);
  EXPECT_EQ(r.ranks, 3);
  double wall = 0, rss = 0, rank_seconds = 0;
  for (const auto& x : ranks) wall = std::max(wall, x.wall_s), rss = std::max(rss, x.peak_rss_bytes), rank_seconds += x.wall_s;
  EXPECT_EQ(r.wall_s, wall);
  EXPECT_EQ(r.peak_rss_bytes, rss);
  ASSERT_EQ(r.stages.size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    SCOPED_TRACE(kIds[i]);
    int64_t in = 0, out = 0, skipped = 0;
    double busy = 0, idle = 0, held = 0, capacity = 0, order = 0, fork = 0, tail = 0, piece = 0;
    for (const auto& x : ranks) {
      const StageReport& s = x.stages[i];
      in += s.items_in, out += s.items_out, skipped += s.skipped, busy += s.busy_s, idle += s.wait_input_s;
      held += s.wait_output_s, capacity += x.wall_s * s.threads;
      order += s.order_wait_s, fork += s.fork_s, tail += s.fork_tail_s, piece += s.piece_s;
    }
    EXPECT_DOUBLE_EQ(r.stages[i].order_wait_s, order);
    EXPECT_DOUBLE_EQ(r.stages[i].fork_s, fork);
    EXPECT_DOUBLE_EQ(r.stages[i].fork_tail_s, tail);
    EXPECT_DOUBLE_EQ(r.stages[i].piece_s, piece);
    if (fork > 0) {
      EXPECT_DOUBLE_EQ(r.stages[i].tail_share(), tail / fork);
    }
    EXPECT_EQ(r.stages[i].items_in, in);
    EXPECT_EQ(r.stages[i].items_out, out);
    EXPECT_EQ(r.stages[i].skipped, skipped);
    EXPECT_DOUBLE_EQ(r.stages[i].busy_s, busy);
    EXPECT_DOUBLE_EQ(r.stages[i].wait_input_s, idle);
    EXPECT_DOUBLE_EQ(r.stages[i].wait_output_s, held);
    EXPECT_EQ(r.stages[i].threads, ranks[0].stages[i].threads) << "each rank's";
    EXPECT_DOUBLE_EQ(r.stages[i].utilization, busy / capacity);
  }
  EXPECT_FALSE(r.threads_differ);
  EXPECT_EQ(r.bottleneck, diagnose(r.stages, rank_seconds, 2));
  // Skips: the total; 20 examples taken in turn (rank 0 has 3, rank 1 23, rank 2 43), by rank.
  EXPECT_EQ(r.skips_total, 3 + 23 + 43);
  ASSERT_EQ(r.skips.size(), 20u);
  std::vector<int> per(3, 0);
  for (size_t i = 0; i < r.skips.size(); ++i) {
    ++per[(size_t)r.skips[i].rank];
    if (i > 0) {
      EXPECT_LE(r.skips[i - 1].rank, r.skips[i].rank) << "listed by rank";
    }
  }
  EXPECT_EQ(per, (std::vector<int>{3, 9, 8}));
  EXPECT_EQ(r.skips[0].item, ranks[0].skips[0].item);
  EXPECT_EQ(r.skips[3].item, ranks[1].skips[0].item);
  // Groups: summed by stage and cause, examples with their rank.
  int64_t grouped = 0;
  for (const auto& g : r.skip_groups) {
    grouped += g.count;
    EXPECT_LE(g.examples.size(), kSkipExamples);
    for (const auto& e : g.examples) EXPECT_GE(e.rank, 0);
  }
  EXPECT_EQ(grouped, r.skips_total);
  EXPECT_EQ(r.skip_groups.size(), 2u);
  for (size_t i = 1; i < r.skip_groups.size(); ++i) EXPECT_GE(r.skip_groups[i - 1].count, r.skip_groups[i].count);
  // The figure line: rank 0's, written from the sum (and the largest of a max_ figure).
  double hits = 0, peak = 0;
  for (const auto& x : ranks) hits += x.figure_lines[0].figures.at("hits"), peak = std::max(peak, x.figure_lines[0].figures.at("max_peak"));
  EXPECT_EQ(r.summaries[1], "read: " + std::to_string((long long)hits) + " hits, peak " + std::to_string((long long)peak) + " over 3");
  EXPECT_EQ(r.summaries[2], "checkpoint: rank 0") << "a line without figures stays rank 0's";
  // The printed summary says what it covers.
  const std::string text = format_report(r);
  EXPECT_NE(text.find("Where the time went, over 3 ranks (wall "), std::string::npos) << text;
  EXPECT_NE(text.find("summed over the 3 ranks"), std::string::npos) << text;
  EXPECT_NE(text.find("Skipped 69 item(s) over 3 ranks"), std::string::npos) << text;
  EXPECT_NE(text.find("  [rank 2] [crop] scene_2_1: "), std::string::npos) << text;
  EXPECT_NE(text.find("  ... and 49 more\n"), std::string::npos) << text;
}

// CPU use over two ranks of different walls and loads: every rank's CPU seconds over every rank's
// wall x cores, not the mean of the two percentages (which would weigh the short rank as much).
TEST(RunTotals, TwoRanksCpuUseIsTheirCpuSecondsOverTheirWallTimesCores) {
  std::mt19937 rng(3);
  std::vector<RunResult> ranks{random_rank(rng, 0), random_rank(rng, 1)};
  ranks[0].wall_s = 10, ranks[0].cpu.cores = 2, ranks[0].cpu.core_s = 20, ranks[0].cpu.user_s = 15, ranks[0].cpu.system_s = 3;
  ranks[0].cpu.startup_s = 1, ranks[0].cpu.startup_core_s = 2, ranks[0].cpu.startup_cpu_s = 0.5;
  ranks[1].wall_s = 40, ranks[1].cpu.cores = 2, ranks[1].cpu.core_s = 80, ranks[1].cpu.user_s = 16, ranks[1].cpu.system_s = 4;
  ranks[1].cpu.startup_s = 3, ranks[1].cpu.startup_core_s = 6, ranks[1].cpu.startup_cpu_s = 1.5;
  const RunResult r = combine_rank_shares({ranks[0], parse_rank_share(rank_share_json(ranks[1]), 1)});
  EXPECT_DOUBLE_EQ(r.cpu.user_s, 31);
  EXPECT_DOUBLE_EQ(r.cpu.system_s, 7);
  EXPECT_DOUBLE_EQ(r.cpu.core_s, 100);
  EXPECT_DOUBLE_EQ(r.cpu.use(), 0.38) << "(18 + 20) / (20 + 80); the mean of 90% and 25% would say 57.5%";
  EXPECT_EQ(r.cpu.cores, 2);
  EXPECT_DOUBLE_EQ(r.cpu.startup_s, 3) << "the longest rank's";
  EXPECT_DOUBLE_EQ(r.cpu.startup_use(), 2.0 / 8);
  EXPECT_DOUBLE_EQ(r.cpu.steady_use(), (38 - 2.0) / (100 - 8));
  // A rank whose data never reached its last stage adds to the whole, not to the start-up.
  ranks[1].cpu.startup_s = -1, ranks[1].cpu.startup_core_s = ranks[1].cpu.startup_cpu_s = 0;
  const RunResult q = combine_rank_shares(ranks);
  EXPECT_DOUBLE_EQ(q.cpu.startup_s, 1);
  EXPECT_DOUBLE_EQ(q.cpu.startup_use(), 0.25);
  EXPECT_DOUBLE_EQ(q.cpu.use(), 0.38);
  const std::string text = format_report(r);
  EXPECT_NE(text.find("  CPU over 2 ranks: 31.00 s user + 7.00 s system = 38% of their wall x cores (2 cores each"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("start-up (until the first item reached 'train': 3.00 s, the longest rank's) 25%, then 39%"),
            std::string::npos)
      << text;
}

TEST(RunTotals, RanksThatRanOtherStagesAreAnError) {
  std::mt19937 rng(2);
  std::vector<RunResult> shares{random_rank(rng, 0), random_rank(rng, 1)};
  shares[1].stages[2].id = "crop2";
  EXPECT_THROW(combine_rank_shares(shares), Error);
  shares[1].stages.pop_back();
  EXPECT_THROW(combine_rank_shares(shares), Error);
}

TEST(RunTotals, OneProcessIsLeftAsItWas) {
  std::mt19937 rng(9);
  RunResult r = random_rank(rng, 0);
  const std::string before = format_report(r);
  total_over_ranks(r, solo_comm());
  EXPECT_EQ(r.ranks, 1);
  EXPECT_EQ(format_report(r), before);
}

// The one-process summary, byte for byte (the README's main-job block, the tests and scripts that
// read the table depend on it: the first columns keep their places, the legend opens with "  (").
TEST(RunTotals, TheOneProcessSummaryTextIsUnchanged) {
  RunResult r;
  r.wall_s = 36.28, r.peak_rss_bytes = 223.0 * 1048576;
  StageReport a;
  a.id = "scan", a.type = "scan_dataset", a.threads = 1, a.items_in = 720, a.items_out = 720, a.wait_output_s = 35.8;
  a.serial = true;
  StageReport b;
  b.id = "crop", b.type = "crop_polyline", b.threads = 2, b.items_in = 41970, b.items_out = 40039, b.skipped = 1931;
  b.busy_s = 0.92, b.utilization = 0.0127, b.wait_input_s = 71.64, b.fork_s = 0.8, b.fork_tail_s = 0.2;
  StageReport c;
  c.id = "train", c.type = "train_step", c.threads = 1, c.serial = true, c.items_in = 11, c.busy_s = 36.1;
  c.utilization = 0.99, c.wait_input_s = 0.18, c.order_wait_s = 1.25;
  r.stages = {a, b, c};
  r.threads = 2;
  r.cpu.user_s = 60.5, r.cpu.system_s = 2.25, r.cpu.cores = 2, r.cpu.affinity_cpus = 2, r.cpu.core_s = 2 * 36.28;
  r.cpu.startup_s = 1.5, r.cpu.startup_cpu_s = 0.75, r.cpu.startup_core_s = 3;
  r.bottleneck = "'train' (the sink) is busy 100% of the run.";
  for (int i = 0; i < 22; ++i) r.skips.push_back({"crop", "scene_0009 line " + std::to_string(i), "4 points"});
  r.skips_total = 22;
  std::string want =
      "\nWhere the time went (wall 36.28 s, peak RSS of the process 223 MiB)\n"
      "  stage        type             threads  items in items out  skipped   busy s  busy %     idle s     held s  order s tail %\n"
      "  scan         scan_dataset           1       720       720        0     0.00      0%       0.00      35.80        -      -\n"
      "  crop         crop_polyline          2     41970     40039     1931     0.92      1%      71.64       0.00        -    25%\n"
      "  train        train_step             1        11         0        0    36.10     99%       0.18       0.00     1.25      -\n"
      "  (busy %: busy time / (wall x threads); idle: its threads waited for input; held: the source's next\n"
      "   item waited for a place in in_flight; order s: envelopes ready before a serial stage but held until\n"
      "   an earlier one arrived, summed over envelopes; tail %: the share of a parallel stage's fork-join\n"
      "   time after the last of its pieces was handed to a thread (threads that came free had none left))\n"
      "  CPU: 60.50 s user + 2.25 s system = 86% of 2 cores over the wall (the fewer of the run's threads and the 2 CPUs in the "
      "affinity mask); start-up (until the first item reached 'train': 1.50 s) 25%, then 89%\n"
      "  Bottleneck: 'train' (the sink) is busy 100% of the run.\n"
      "\nSkipped 22 item(s):\n";
  for (int i = 0; i < 20; ++i) want += "  [crop] scene_0009 line " + std::to_string(i) + ": 4 points\n";
  want += "  ... and 2 more\n";
  EXPECT_EQ(format_report(r), want);
}

TEST(RunTotals, AFigureLineIsWrittenInItsPlaceFromOneProcesssFigures) {
  RunContext ctx;
  ctx.add_summary("first");
  ctx.add_summary("k", {{"n", 7}}, [](const std::map<std::string, double>& f, int ranks) {
    return "n=" + std::to_string((long long)f.at("n")) + " ranks=" + std::to_string(ranks);
  });
  ctx.add_summary("last");
  EXPECT_EQ(ctx.summaries(), (std::vector<std::string>{"first", "n=7 ranks=1", "last"}));
  ASSERT_EQ(ctx.figure_lines().size(), 1u);
  EXPECT_EQ(ctx.figure_lines()[0].line, 1u);
}

}  // namespace
}  // namespace sl
