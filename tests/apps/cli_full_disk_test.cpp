// Files the command line cannot write: a file size limit (RLIMIT_FSIZE, `ulimit -f`, set in the
// child before it runs streamline; no root needed) stands for a full disk. The process used to
// die of SIGXFSZ (exit 153) with a temporary file left in the run folder; now every file it
// writes ends the command with the file and the reason, exit 1, no temporary file, and what was
// written before stays whole.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "graph/atomic_file.h"
#include "kernels/safetensors.h"
#include "train/checkpoints.h"
#include "tests/apps/cli_util.h"
#include "tests/formats/clouds/io_test_util.h"

namespace sl {
namespace {

namespace fs = std::filesystem;
using test::q;
using test::run_cli;

const std::string kTrain = std::string(SL_SOURCE_DIR) + "/pipelines/line_refine_train.json";
const std::string kTooLarge = std::strerror(EFBIG);

// `streamline <args>` in a child whose files may not grow beyond `limit` bytes (0: no limit).
// code -1 and signal set when a signal ended it.
struct Limited {
  int code = -1, signal = 0;
  std::string out, err;
};
Limited run_limited(const test::TempDir& dir, std::vector<std::string> args, rlim_t limit) {
  const std::string out = dir.path("limited.out"), err = dir.path("limited.err");
  const pid_t pid = test::spawn_cli(args, out, err, [limit] {
    if (limit == 0) return;
    const rlimit rl{limit, limit};
    if (::setrlimit(RLIMIT_FSIZE, &rl) != 0) ::_exit(125);
  });
  Limited r;
  r.code = test::wait_cli(pid, &r.signal);
  r.out = read_file(out);
  r.err = read_file(err);
  return r;
}

std::vector<std::string> temporaries(const std::string& dir) {
  std::vector<std::string> tmp;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.path().filename().string().find(".tmp.") != std::string::npos) tmp.push_back(e.path().string());
  return tmp;
}

std::vector<std::string> train_args(const std::string& root, const std::string& run, int epochs, bool tiny,
                                    std::vector<std::string> more = {}) {
  std::vector<std::string> a = {"run", kTrain, "-q"};
  std::vector<std::string> sets = {"scan.root=" + root + "/train", "train.eval.root=null", "train.checkpoint.dir=" + run,
                                   "epochs=" + std::to_string(epochs), "resample.points=64", "perturb.points=8",
                                   "batch.size=8", "train.checkpoint.every_steps=5", "train.log.every_steps=1"};
  if (tiny) sets.insert(sets.end(), {"train.model.encoder=[8,8,16]", "train.model.line_mlp=[8]", "train.model.regressor=[8]"});
  sets.insert(sets.end(), more.begin(), more.end());
  for (const auto& s : sets) a.insert(a.end(), {"--set", s});
  return a;
}

// The weights, Adam state and data position of two checkpoints (the recorded pipelines differ by
// their checkpoint folders).
void expect_same_training_state(const std::string& a, const std::string& b) {
  const StFile x = read_safetensors(a), y = read_safetensors(b);
  ASSERT_EQ(x.tensors.size(), y.tensors.size());
  for (const auto& [name, t] : x.tensors) EXPECT_TRUE(t.bytes == y.tensors.at(name).bytes) << name;
  for (const auto& [k, v] : x.metadata) {
    if (k == "pipeline") continue;
    EXPECT_EQ(v, y.metadata.at(k)) << k;
  }
}

// `ulimit -f` below the size of a checkpoint while one is due: exit 1 naming the checkpoint and
// the reason, no temporary file, the previous checkpoint whole, and a resume from it finishes the
// run with the state of a run that never stopped.
TEST(CliFullDisk, ACheckpointBeyondTheFileSizeLimitEndsTheRunAndAResumeFinishesIt) {
  test::TempDir dir;
  const std::string root = dir.path("ds"), run = dir.path("run");
  ASSERT_EQ(run_cli(dir, "gen-data " + q(root) + " --train 2 --val 1").code, 0);
  auto first = run_limited(dir, train_args(root, run, 1, false), 0);
  ASSERT_EQ(first.code, 0) << first.err;
  const std::string kept = latest_checkpoint(run);
  ASSERT_FALSE(kept.empty());
  const std::string kept_bytes = read_file(kept);
  ASSERT_GT(kept_bytes.size(), 3u << 20) << "the default model's checkpoint: beyond the limit below";

  auto full = run_limited(dir, train_args(root, run, 3, false, {"train.resume=auto"}), 1u << 20);
  EXPECT_EQ(full.signal, 0) << "killed by a signal";
  ASSERT_EQ(full.code, 1) << full.err;
  const std::string next = latest_checkpoint(run);
  EXPECT_EQ(next, kept);
  const std::string due = kept.substr(0, kept.size() - std::string("00000000.safetensors").size());
  EXPECT_NE(full.err.find("error: stage 'train': " + due), std::string::npos) << full.err;
  EXPECT_NE(full.err.find(".safetensors: write failed: " + kTooLarge + " (checkpoint at step "), std::string::npos)
      << full.err;
  EXPECT_NE(full.err.find("not written; the last checkpoint, " + kept +
                          ", is intact: resume from it with --set train.resume=auto)"),
            std::string::npos)
      << full.err;
  EXPECT_TRUE(temporaries(run).empty());
  EXPECT_TRUE(read_file(kept) == kept_bytes) << "the previous checkpoint changed";
  const std::string metrics = read_file(run + "/metrics.jsonl");
  EXPECT_EQ(metrics.back(), '\n');

  auto rest = run_limited(dir, train_args(root, run, 3, false, {"train.resume=auto"}), 0);
  ASSERT_EQ(rest.code, 0) << rest.err;
  const std::string straight = dir.path("straight");
  ASSERT_EQ(run_limited(dir, train_args(root, straight, 3, false), 0).code, 0);
  EXPECT_EQ(fs::path(latest_checkpoint(run)).filename(), fs::path(latest_checkpoint(straight)).filename());
  expect_same_training_state(latest_checkpoint(run), latest_checkpoint(straight));
}

// The metrics file at the limit: the line that does not fit is refused whole, the run ends
// naming the file, and a resume from the checkpoint before it finishes the run.
TEST(CliFullDisk, AMetricsLineBeyondTheLimitEndsTheRunWithTheFileWholeAndAResumeFinishesIt) {
  test::TempDir dir;
  const std::string root = dir.path("ds"), run = dir.path("run");
  ASSERT_EQ(run_cli(dir, "gen-data " + q(root) + " --train 2 --val 1").code, 0);
  ASSERT_EQ(run_limited(dir, train_args(root, run, 1, true), 0).code, 0);
  const std::string kept = latest_checkpoint(run);
  // The metrics file, padded with a note line to 100 bytes under the limit: every other file of
  // the run (about 50 KB at most) fits, the next metrics lines do not.
  const rlim_t limit = 200000;
  const std::string logged = read_file(run + "/metrics.jsonl");
  std::string metrics = logged;
  const std::string pad_head = "{\"type\":\"note\",\"text\":\"", pad_tail = "\"}\n";
  metrics += pad_head + std::string(limit - 100 - metrics.size() - pad_head.size() - pad_tail.size(), 'x') + pad_tail;
  write_file_atomic(run + "/metrics.jsonl", metrics);

  auto full = run_limited(dir, train_args(root, run, 2, true, {"train.resume=auto"}), limit);
  EXPECT_EQ(full.signal, 0);
  ASSERT_EQ(full.code, 1) << full.err;
  EXPECT_NE(full.err.find("error: stage 'train': " + run + "/metrics.jsonl: write failed: " + kTooLarge +
                          "; the last checkpoint, "),
            std::string::npos)
      << full.err;
  EXPECT_TRUE(temporaries(run).empty());
  const std::string after = read_file(run + "/metrics.jsonl");
  EXPECT_EQ(after.back(), '\n') << "a half line was left";
  EXPECT_LE(after.size(), (size_t)limit);

  EXPECT_TRUE(after == metrics) << "the file changed";
  write_file_atomic(run + "/metrics.jsonl", logged);  // room again
  auto rest = run_limited(dir, train_args(root, run, 2, true, {"train.resume=auto"}), 0);
  ASSERT_EQ(rest.code, 0) << rest.err;
  const std::string straight = dir.path("straight");
  ASSERT_EQ(run_limited(dir, train_args(root, straight, 2, true), 0).code, 0);
  expect_same_training_state(latest_checkpoint(run), latest_checkpoint(straight));
  EXPECT_NE(latest_checkpoint(run), kept);
}

// Every other file a command writes, each under a limit it exceeds: the run's facts (run.json,
// before anything trains), the trace, a sample cache, infer's output, gen-data's scenes, the
// report, and standard output redirected to a file.
TEST(CliFullDisk, EveryOtherOutputFileBeyondTheLimitIsAnErrorNamingItWithNoTemporaryLeft) {
  test::TempDir dir;
  const std::string root = dir.path("ds"), run = dir.path("run");
  ASSERT_EQ(run_cli(dir, "gen-data " + q(root) + " --train 2 --val 1").code, 0);
  auto expect_fails = [&](const Limited& r, const std::string& file, const std::string& what) {
    EXPECT_EQ(r.signal, 0) << file << ": killed by a signal";
    EXPECT_EQ(r.code, 1) << file << "\n" << r.err;
    EXPECT_NE(r.err.find(file + ": " + what + ": " + kTooLarge), std::string::npos) << r.err;
    EXPECT_TRUE(temporaries(dir.path("")).empty()) << file;
  };

  // run.json is written before the graph starts: nothing trains.
  expect_fails(run_limited(dir, train_args(root, run, 1, true), 4000), run + "/run.json", "write failed");
  EXPECT_TRUE(latest_checkpoint(run).empty());

  // The trace, written at the end of a run that wrote nothing else.
  const std::string trace = dir.path("trace.json");
  expect_fails(run_limited(dir,
                           {"run", std::string(SL_SOURCE_DIR) + "/pipelines/preprocess_bench.json", "-q", "--trace", trace,
                            "--set", "scan.root=" + root + "/train", "--set", "batch.size=1", "--set", "resample.points=64"},
                           20000),
               trace, "write failed");
  EXPECT_FALSE(fs::exists(trace));

  // A sample cache.
  const std::string cache = dir.path("cache.safetensors");
  expect_fails(run_limited(dir,
                           {"run", std::string(SL_SOURCE_DIR) + "/pipelines/preprocess_to_cache.json", "-q", "--set",
                            "scan.root=" + root + "/train", "--set", "write.path=" + cache, "--set", "resample.points=64"},
                           20000),
               cache, "write failed");
  EXPECT_FALSE(fs::exists(cache));

  // infer's refined lines (~20 KB here), then the report of the run they came from (~50 KB).
  ASSERT_EQ(run_limited(dir, train_args(root, run, 1, true), 0).code, 0);
  const std::string refined = dir.path("refined.json");
  expect_fails(run_limited(dir, {"infer", "--checkpoint", run, "--cloud", root + "/val/scene_0000.pcd", "--out", refined},
                           4000),
               refined, "write failed");
  EXPECT_FALSE(fs::exists(refined));
  const std::string report_before = read_file(run + "/report.html");
  expect_fails(run_limited(dir, {"report", run}, 4000), run + "/report.html", "write failed");
  EXPECT_TRUE(read_file(run + "/report.html") == report_before);

  // gen-data: the first scene that does not fit.
  const std::string gen = dir.path("gen");
  const auto g = run_limited(dir, {"gen-data", gen, "--train", "1", "--val", "0"}, 50000);
  expect_fails(g, gen + "/train/scene_0000.pcd", "write failed");

  // Standard output to a file that cannot grow: not a silently cut listing.
  const auto s = run_limited(dir, {"stages", "--json"}, 4000);
  EXPECT_EQ(s.signal, 0);
  EXPECT_EQ(s.code, 1);
  EXPECT_NE(s.err.find("error: standard output: write failed"), std::string::npos) << s.err;
  EXPECT_LE(fs::file_size(dir.path("limited.out")), 4000u);
}

}  // namespace
}  // namespace sl
