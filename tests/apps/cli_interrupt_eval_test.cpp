// Ctrl-C while a training run evaluates (the nested evaluation run on the validation split): the
// evaluation stops at once instead of running to its end, the run checkpoints and exits 130, and
// a resume continues exactly.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <csignal>
#include <filesystem>
#include <string>
#include <thread>
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
using Clock = std::chrono::steady_clock;

TEST(CliInterrupt, CtrlCDuringEvaluationStopsItWithinASecondAndAResumeContinuesExactly) {
  test::TempDir dir;
  const std::string root = dir.path("ds"), run = dir.path("run"), straight = dir.path("straight");
  // One training scene, twelve to evaluate on, 2048 points a sample: the evaluation after epoch 1
  // takes seconds, the training little.
  ASSERT_EQ(run_cli(dir, "gen-data " + q(root) + " --train 1 --val 12").code, 0);
  auto args = [&](const std::string& ckpt, const std::string& eval_root, std::vector<std::string> more) {
    std::vector<std::string> a = {"run", std::string(SL_SOURCE_DIR) + "/pipelines/line_refine_train.json"};
    std::vector<std::string> sets = {"scan.root=" + root + "/train", "train.eval.root=" + eval_root,
                                     "train.checkpoint.dir=" + ckpt, "epochs=2", "train.eval.every_epochs=1",
                                     "train.checkpoint.every_steps=0", "train.log.every_steps=1",
                                     "train.log.progress=lines", "resample.points=2048", "batch.size=4",
                                     "batch.slots=3"};
    sets.insert(sets.end(), more.begin(), more.end());
    for (const auto& s : sets) a.insert(a.end(), {"--set", s});
    return a;
  };
  const std::string out = dir.path("train.out"), err = dir.path("train.err");
  const pid_t pid = test::spawn_cli(args(run, root + "/val", {}), out, err);
  ASSERT_GT(pid, 0);
  auto said = [&](const std::string& text) { return fs::exists(err) && read_file(err).find(text) != std::string::npos; };
  bool evaluating = false;
  for (int i = 0; i < 6000 && !evaluating; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    evaluating = said("evaluating on " + root + "/val after epoch 1");
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // well inside it
  ::kill(pid, SIGINT);
  const auto t0 = Clock::now();
  bool stopped = false;
  for (int i = 0; i < 2000 && !stopped; ++i) {
    stopped = said("evaluation interrupted");
    if (!stopped) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  const double stop_s = std::chrono::duration<double>(Clock::now() - t0).count();
  int signal = 0;
  const int code = test::wait_cli(pid, &signal);
  const double exit_s = std::chrono::duration<double>(Clock::now() - t0).count();
  const std::string log = read_file(err);
  std::fprintf(stderr, "Ctrl-C during evaluation: stopped after %.3f s, exited after %.3f s\n", stop_s, exit_s);
  ASSERT_TRUE(evaluating) << log;
  ASSERT_TRUE(stopped) << log;
  EXPECT_LT(stop_s, 1.0) << log;
  EXPECT_LT(exit_s, 10.0) << log;  // the batches in flight are trained, the checkpoint and report written
  EXPECT_EQ(signal, 0);
  EXPECT_EQ(code, 130) << log;
  EXPECT_EQ(log.find("eval after epoch 1"), std::string::npos) << "the evaluation ran to its end\n" << log;
  EXPECT_NE(log.find("interrupted: stopped the source, drained the stages, finished the sink"), std::string::npos) << log;

  // The checkpoint on disk is whole, nothing temporary is left, and no evaluation was logged.
  const std::string ckpt = latest_checkpoint(run);
  ASSERT_FALSE(ckpt.empty()) << log;
  const StFile at_stop = read_safetensors(ckpt);
  EXPECT_GT(std::stoll(at_stop.metadata.at("step")), 0);
  for (const auto& e : fs::directory_iterator(run)) EXPECT_EQ(e.path().string().find(".tmp."), std::string::npos);
  EXPECT_EQ(read_file(run + "/metrics.jsonl").find("\"type\":\"eval\""), std::string::npos);

  // Resume (without evaluation: it changes no weight) ends where an uninterrupted run ends.
  {
    const pid_t p = test::spawn_cli(args(run, "null", {"train.resume=auto"}), out, err);
    ASSERT_EQ(test::wait_cli(p), 0) << read_file(err);
    EXPECT_NE(read_file(err).find("resumed from " + ckpt + " at step " + at_stop.metadata.at("step")), std::string::npos)
        << read_file(err);
    const pid_t s = test::spawn_cli(args(straight, "null", {}), out, err);
    ASSERT_EQ(test::wait_cli(s), 0) << read_file(err);
  }
  const StFile a = read_safetensors(latest_checkpoint(run)), b = read_safetensors(latest_checkpoint(straight));
  EXPECT_EQ(fs::path(latest_checkpoint(run)).filename(), fs::path(latest_checkpoint(straight)).filename());
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (const auto& [name, t] : b.tensors) EXPECT_TRUE(t.bytes == a.tensors.at(name).bytes) << name;
  for (const auto& [k, v] : b.metadata) {
    if (k == "pipeline") continue;  // names its own checkpoint folder
    EXPECT_EQ(v, a.metadata.at(k)) << k;
  }
}

}  // namespace
}  // namespace sl
