// Resuming a training run as a user does, with --set train.resume=auto on the same command: a
// finished run rerun trains nothing, and a run killed outright (SIGKILL: a preempted machine, the
// out-of-memory killer) at any moment ends, once resumed, on the very checkpoint of a run that was
// never interrupted.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/inotify.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "graph/atomic_file.h"
#include "kernels/safetensors.h"
#include "report/report.h"
#include "train/checkpoints.h"
#include "tests/apps/cli_util.h"
#include "tests/formats/clouds/io_test_util.h"

namespace sl {
namespace {

namespace fs = std::filesystem;
using test::q;
using test::run_cli;
using Clock = std::chrono::steady_clock;

const std::string kTrainPipeline = std::string(SL_SOURCE_DIR) + "/pipelines/line_refine_train.json";

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

std::vector<std::string> checkpoint_names(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& p : list_checkpoints(dir)) names.push_back(fs::path(p).filename().string());
  return names;
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
  return s;
}

// Two checkpoints of runs that differ only in their folder (`dir_a`, `dir_b`): the same step's file,
// every tensor bit for bit, and the metadata alike, the recorded pipeline once each names its own
// folder the same way.
void expect_same_checkpoint(const std::string& a_path, const std::string& dir_a, const std::string& b_path,
                            const std::string& dir_b) {
  EXPECT_EQ(fs::path(a_path).filename(), fs::path(b_path).filename());
  const StFile a = read_safetensors(a_path), b = read_safetensors(b_path);
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (const auto& [name, t] : b.tensors) {
    ASSERT_EQ(a.tensors.count(name), 1u) << name;
    const StTensor& u = a.tensors.at(name);
    EXPECT_EQ(u.dtype, t.dtype) << name;
    EXPECT_EQ(u.shape, t.shape) << name;
    EXPECT_TRUE(u.bytes == t.bytes) << name << " differs from the uninterrupted run's";
  }
  ASSERT_EQ(a.metadata.size(), b.metadata.size());
  for (const auto& [k, v] : b.metadata) {
    ASSERT_EQ(a.metadata.count(k), 1u) << k;
    if (k == "pipeline") {
      ASSERT_NE(v.find(dir_b), std::string::npos) << "the recorded pipeline no longer names its folder: " << v;
      EXPECT_EQ(replace_all(a.metadata.at(k), dir_a, dir_b), v);
    } else {
      EXPECT_EQ(a.metadata.at(k), v) << k;
    }
  }
}

// The commands (issue 35), as written there: max_steps 4, a checkpoint every 2 steps, 40
// epochs that are never reached, resume=auto from the first run on.
TEST(CliResume, AMaxStepsRunRerunThreeTimesEndsAtItsStepAndRaisingMaxStepsContinuesLikeOneLongerRun) {
  test::TempDir dir;
  const std::string data = dir.path("d"), run = dir.path("run"), longer = dir.path("longer");
  ASSERT_EQ(run_cli(dir, "gen-data " + q(data) + " --train 2 --val 1").code, 0);
  auto cmd = [&](const std::string& ckpt, int max_steps) {
    return "run " + q(kTrainPipeline) + " --set scan.root=" + q(data + "/train") + " --set train.eval.root=" +
           q(data + "/val") + " --set train.checkpoint.dir=" + q(ckpt) +
           " --set train.checkpoint.every_steps=2 --set epochs=40 --set train.max_steps=" + std::to_string(max_steps) +
           " --set train.resume=auto";
  };
  const std::string last = run + "/step_00000004.safetensors";
  std::string bytes;
  for (int i = 0; i < 3; ++i) {
    SCOPED_TRACE("run " + std::to_string(i + 1));
    const auto r = run_cli(dir, cmd(run, 4));
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(checkpoint_names(run), (std::vector<std::string>{"step_00000002.safetensors", "step_00000004.safetensors"}))
        << r.out << r.err;
    if (i == 0) {
      EXPECT_NE(r.err.find("reached max_steps 4"), std::string::npos) << r.err;
      EXPECT_NE(r.out.find("checkpoint: " + last + " (step 4)"), std::string::npos) << r.out;
      EXPECT_EQ(r.out.find("nothing left to train"), std::string::npos) << r.out;
      bytes = read_file(last);
      continue;
    }
    // Trained nothing, wrote nothing, and said why and what to do.
    EXPECT_NE(r.err.find("resumed from " + last + " at step 4,"), std::string::npos) << r.err;
    EXPECT_NE(r.out.find("resume: nothing left to train: " + last +
                         " (step 4) already reached this run's max_steps 4; raise \"train.max_steps\" to train further"),
              std::string::npos)
        << r.out;
    EXPECT_EQ(r.err.find("reached max_steps"), std::string::npos) << r.err;
    EXPECT_EQ(r.out.find("checkpoint: "), std::string::npos) << r.out;
    EXPECT_EQ(r.err.find("evaluating on "), std::string::npos) << r.err;
    EXPECT_TRUE(read_file(last) == bytes) << "the step 4 checkpoint was rewritten with other bytes";
  }
  // Nor evaluated the same weights again: the one evaluation of step 4 is the first run's.
  const std::string metrics = read_file(run + "/metrics.jsonl");
  EXPECT_EQ(metrics.find("\"step\":5,"), std::string::npos) << metrics;
  EXPECT_EQ(count_of(metrics, "{\"type\":\"eval\","), 1u) << metrics;
  EXPECT_EQ(count_of(metrics, "{\"type\":\"eval\",\"step\":4,"), 1u) << metrics;

  // Raised: it continues from step 4 to step 7 and ends as a run of 7 steps from the start does.
  const auto more = run_cli(dir, cmd(run, 7));
  ASSERT_EQ(more.code, 0) << more.err;
  EXPECT_NE(more.err.find("resumed from " + last + " at step 4,"), std::string::npos) << more.err;
  EXPECT_EQ(more.out.find("nothing left to train"), std::string::npos) << more.out;
  EXPECT_EQ(latest_checkpoint(run), run + "/step_00000007.safetensors");
  const auto whole = run_cli(dir, cmd(longer, 7));
  ASSERT_EQ(whole.code, 0) << whole.err;
  expect_same_checkpoint(latest_checkpoint(run), run, latest_checkpoint(longer), longer);
}

// ---- SIGKILL at random moments ---------------------------------------------------------------

// What a life of the run is killed after (each with a random part drawn from a seeded RNG).
enum class Moment {
  Step,        // the k-th progress line of an odd step (no checkpoint follows), then 0-8 ms: in the next step
  Checkpoint,  // the creation of the k-th checkpoint's temporary file, then 0-4 ms: in its write or fsync
  Eval,        // "evaluating on", then 0-20 ms: in the evaluation
  End,         // the final checkpoint of the uninterrupted run on disk, then 0-20 ms: in the final
               // evaluation or report, or in a rerun that has nothing left to train
  Report,      // the creation of the k-th report.html's temporary file, then 0-2 ms: in its write
  Facts,       // the creation of the k-th run.json's temporary file (the run's facts: at its start
               // and end), then 0-1 ms: in its write
};
const char* moment_name(Moment m) {
  switch (m) {
    case Moment::Step: return "step";
    case Moment::Checkpoint: return "checkpoint";
    case Moment::Eval: return "eval";
    case Moment::End: return "end";
    case Moment::Report: return "report";
    case Moment::Facts: return "facts";
  }
  return "?";
}

// A life's stderr so far ("" before the child has opened it).
std::string said_so_far(const std::string& path) { return fs::exists(path) ? read_file(path) : ""; }

// The progress lines ("epoch 1/3  step 5  ...") of odd steps in `text`.
size_t odd_steps_said(const std::string& text) {
  size_t n = 0;
  const std::string mark = "  step ";
  for (size_t at = text.find(mark); at != std::string::npos; at = text.find(mark, at + 1)) {
    const size_t end = text.find(' ', at + mark.size());
    if (end == std::string::npos) break;  // a line still being written
    n += std::stoll(text.substr(at + mark.size(), end - at - mark.size())) % 2;
  }
  return n;
}

// Our temporary files ("<name>.tmp.sl<pid>") anywhere under `dir`.
std::vector<std::string> temporary_files(const std::string& dir) {
  std::vector<std::string> found;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.path().filename().string().find(".tmp.sl") != std::string::npos) found.push_back(e.path().string());
  return found;
}

// Tiny data (one training scene, 256 points a sample, batches of 8: five steps an epoch), a
// checkpoint every second step (a step's own time is then seen too: a write takes longer than a
// step of this size), an evaluation after every epoch, three epochs of which max_steps 13 cuts the
// last (the end the issue was about; its checkpoint is the final one, not a periodic one): about a
// second. Sixteen lives are killed, each at a moment of its kind (in training, a checkpoint's,
// the report's or the run facts' write, an evaluation, after the last checkpoint), then one runs
// to its end: it ends on the uninterrupted run's checkpoint, and no temporary file of any life
// is left in the folder, although the kills left some behind.
TEST(CliResume, SigkillAtRandomMomentsThenResumeAutoEndsOnTheUninterruptedRunsCheckpoint) {
  test::TempDir dir;
  const std::string data = dir.path("ds"), run = dir.path("run"), straight = dir.path("straight");
  ASSERT_EQ(run_cli(dir, "gen-data " + q(data) + " --train 1 --val 1").code, 0);
  auto args = [&](const std::string& ckpt) {
    std::vector<std::string> a = {"run", kTrainPipeline, "--threads", "1"};
    const std::vector<std::string> sets = {
        "scan.root=" + data + "/train", "train.eval.root=" + data + "/val", "train.checkpoint.dir=" + ckpt,
        "epochs=3", "train.max_steps=13", "train.eval.every_epochs=1", "train.checkpoint.every_steps=2",
        "train.log.every_steps=1", "train.log.progress=lines", "resample.points=256", "batch.size=8",
        "train.resume=auto"};
    for (const auto& s : sets) a.insert(a.end(), {"--set", s});
    return a;
  };
  const auto t_start = Clock::now();
  {
    const pid_t p = test::spawn_cli(args(straight), dir.path("straight.out"), dir.path("straight.err"));
    ASSERT_EQ(test::wait_cli(p), 0) << read_file(dir.path("straight.err"));
  }
  const std::string final_ckpt = latest_checkpoint(straight);
  ASSERT_FALSE(final_ckpt.empty());
  const std::string final_name = fs::path(final_ckpt).filename().string();
  ASSERT_EQ(final_name, "step_00000013.safetensors") << "the run should end on max_steps, in its third epoch";

  // The checkpoint folder is watched for the creation of temporary files (inotify: at once, where
  // polling the folder misses a write of a few milliseconds).
  fs::create_directories(run);
  struct Fd {
    int fd;
    ~Fd() {
      if (fd >= 0) ::close(fd);
    }
  } watching{::inotify_init1(IN_NONBLOCK | IN_CLOEXEC)};
  const int watch = watching.fd;
  ASSERT_GE(watch, 0);
  ASSERT_GE(::inotify_add_watch(watch, run.c_str(), IN_CREATE), 0);

  std::mt19937 rng(35);  // the number: the same kill schedule every time
  auto draw = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const std::vector<Moment> plan = {Moment::Checkpoint, Moment::Step,   Moment::Eval,   Moment::Report,
                                    Moment::Checkpoint, Moment::Facts,  Moment::Step,   Moment::Eval,
                                    Moment::Report,     Moment::Checkpoint, Moment::Step, Moment::Facts,
                                    Moment::End,        Moment::Eval,   Moment::End,    Moment::Step};
  int killed = 0, in_write = 0, in_eval = 0, in_training = 0, after_last = 0, left_temp = 0, in_report_write = 0;
  std::string account;
  for (size_t life = 0; life < plan.size(); ++life) {
    const Moment m = plan[life];
    const int k = draw(1, 3);
    const int delay_us = draw(0, m == Moment::Checkpoint ? 4000
                                 : m == Moment::Step     ? 8000
                                 : m == Moment::Report   ? 2000
                                 : m == Moment::Facts    ? 1000
                                                         : 20000);
    const std::string err = dir.path("life" + std::to_string(life) + ".err");
    const pid_t pid = test::spawn_cli(args(run), dir.path("life.out"), err);
    ASSERT_GT(pid, 0);
    const std::string tmp_mark = ".tmp.sl" + std::to_string(pid);
    int temps = 0, reports = 0, facts_files = 0, code = -1, signal = 0;
    bool fired = false, exited = false, final_there = false;
    const auto deadline = Clock::now() + std::chrono::seconds(60);
    while (!fired && !exited && Clock::now() < deadline) {
      pollfd pf{watch, POLLIN, 0};
      if (::poll(&pf, 1, 1) > 0) {
        alignas(inotify_event) char buf[4096];
        for (ssize_t n; (n = ::read(watch, buf, sizeof buf)) > 0;)
          for (char* p = buf; p < buf + n; p += sizeof(inotify_event) + reinterpret_cast<inotify_event*>(p)->len) {
            const auto* e = reinterpret_cast<inotify_event*>(p);
            const std::string name = e->len ? e->name : "";
            if (name.find(tmp_mark) == std::string::npos) continue;
            if (name.rfind("step_", 0) == 0) ++temps;
            if (name.rfind("report.html", 0) == 0) ++reports;
            if (name.rfind("run.json", 0) == 0) ++facts_files;
          }
      }
      switch (m) {
        case Moment::Checkpoint: fired = temps >= k; break;
        case Moment::Step: fired = odd_steps_said(said_so_far(err)) >= (size_t)k; break;
        case Moment::Eval: fired = said_so_far(err).find("evaluating on ") != std::string::npos; break;
        case Moment::End: fired = fs::exists(run + "/" + final_name); break;
        case Moment::Report: fired = reports >= k; break;
        case Moment::Facts: fired = facts_files >= k; break;
      }
      if (!fired) {
        int st = 0;
        if (::waitpid(pid, &st, WNOHANG) == pid) {
          exited = true;
          code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
          signal = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
        }
      }
    }
    if (!exited) {
      std::this_thread::sleep_for(std::chrono::microseconds(delay_us));
      final_there = fs::exists(run + "/" + final_name);
      ::kill(pid, SIGKILL);
      code = test::wait_cli(pid, &signal);
    }
    const std::string said = read_file(err);
    ASSERT_TRUE(fired || exited) << "life " << life << " (" << moment_name(m) << ") neither reached its moment nor ended\n"
                                 << said;
    // A life ends killed, or on its own with success: never on an error of a resume.
    ASSERT_TRUE(signal == SIGKILL || (signal == 0 && code == 0))
        << "life " << life << " ended with code " << code << ", signal " << signal << "\n" << said;
    std::string where = "ended by itself";
    if (signal == SIGKILL) {
      ++killed;
      const std::vector<std::string> temps_left = temporary_files(run);
      const size_t any_temp = temps_left.size();
      left_temp += any_temp > 0;
      for (const auto& t : temps_left) {
        const std::string name = fs::path(t).filename().string();
        if (name.rfind("report.html", 0) == 0 || name.rfind("run.json", 0) == 0) {
          ++in_report_write;
          break;
        }
      }
      bool temp_left = false;
      for (const auto& e : fs::directory_iterator(run))
        temp_left = temp_left || (e.path().filename().string().rfind("step_", 0) == 0 &&
                                  e.path().filename().string().find(tmp_mark) != std::string::npos);
      const size_t eval_at = said.rfind("evaluating on "), eval_done = said.rfind("eval after epoch ");
      const bool evaluating = eval_at != std::string::npos && (eval_done == std::string::npos || eval_done < eval_at);
      if (final_there) ++after_last, where = "after the last checkpoint";
      else if (temp_left) ++in_write, where = "in a checkpoint's write";
      else if (evaluating) ++in_eval, where = "in an evaluation";
      else ++in_training, where = "in training";
      for (const auto& t : temps_left) where += " (left " + fs::path(t).filename().string() + ")";
    }
    const size_t resumed = said.find("resumed from ");
    std::string start = said.find("starting fresh") != std::string::npos ? " (started fresh)" : "";
    if (resumed != std::string::npos) start = " (" + said.substr(resumed, said.find('\n', resumed) - resumed) + ")";
    account += "  life " + std::to_string(life) + ": " + moment_name(m) + " k=" + std::to_string(k) + " +" +
               std::to_string(delay_us) + " us: " + where + start + "\n";
  }
  // The last life: resumed, it runs to its end.
  const pid_t p = test::spawn_cli(args(run), dir.path("last.out"), dir.path("last.err"));
  ASSERT_EQ(test::wait_cli(p), 0) << read_file(dir.path("last.err"));
  const double seconds = std::chrono::duration<double>(Clock::now() - t_start).count();
  std::fprintf(stderr,
               "%d kills (%d in training, %d in a checkpoint's write, %d in an evaluation, %d after the last "
               "checkpoint) in %.1f s:\n%s",
               killed, in_training, in_write, in_eval, after_last, seconds, account.c_str());
  // Each kind of moment was hit (the temporary file left proves a write cut short).
  EXPECT_GE(left_temp, 2) << "kills that left a temporary file behind: the test no longer cuts writes short\n" << account;
  EXPECT_GE(in_report_write, 1) << "no kill cut the report's or the run facts' write short\n" << account;
  EXPECT_TRUE(temporary_files(run).empty()) << "left in the run folder after the finished resume: "
                                            << temporary_files(run)[0] << "\n" << account;
  EXPECT_GE(in_training, 1) << account;
  EXPECT_GE(in_write, 1) << account;
  EXPECT_GE(in_eval, 1) << account;
  EXPECT_GE(after_last, 1) << account;
  expect_same_checkpoint(latest_checkpoint(run), run, final_ckpt, straight);
  // The final evaluation is in the metrics once: a life killed in it left none (a line is written
  // whole or not at all), and the lives after the one that wrote it did not evaluate again.
  const std::string eval13 = "{\"type\":\"eval\",\"step\":13,";
  EXPECT_EQ(count_of(read_file(straight + "/metrics.jsonl"), eval13), 1u);
  EXPECT_EQ(count_of(read_file(run + "/metrics.jsonl"), eval13), 1u) << read_file(run + "/metrics.jsonl");
  // The run report's curves are the uninterrupted run's, every logged step's loss and every
  // evaluation: the lines a life logged past its last checkpoint are superseded by the next
  // life's (report/report.h), which logs the same numbers.
  const report::RunData got = report::load_run(run), want = report::load_run(straight);
  ASSERT_EQ(want.metrics.train.size(), 13u);
  ASSERT_EQ(got.metrics.train.size(), want.metrics.train.size());
  for (size_t i = 0; i < want.metrics.train.size(); ++i) {
    EXPECT_EQ(got.metrics.train[i].step, want.metrics.train[i].step);
    EXPECT_EQ(got.metrics.train[i].loss, want.metrics.train[i].loss) << "step " << want.metrics.train[i].step;
  }
  ASSERT_EQ(want.metrics.eval.size(), 3u);
  ASSERT_EQ(got.metrics.eval.size(), want.metrics.eval.size());
  for (size_t i = 0; i < want.metrics.eval.size(); ++i) {
    EXPECT_EQ(got.metrics.eval[i].step, want.metrics.eval[i].step);
    EXPECT_EQ(got.metrics.eval[i].err_after_m, want.metrics.eval[i].err_after_m) << "step " << want.metrics.eval[i].step;
  }
}

// Two runs given one folder (a second terminal, a job started twice): the second stops at once,
// naming the first, before it reads, trains or writes anything; the first runs on undisturbed.
TEST(CliResume, ASecondRunOnAFolderInUseStopsAtOnceNamingTheFirst) {
  test::TempDir dir;
  const std::string data = dir.path("ds"), run = dir.path("run");
  ASSERT_EQ(run_cli(dir, "gen-data " + q(data) + " --train 1 --val 1").code, 0);
  auto args = [&](const std::string& epochs) {
    std::vector<std::string> a = {"run", kTrainPipeline, "--threads", "1"};
    const std::vector<std::string> sets = {"scan.root=" + data + "/train", "train.eval.root=" + data + "/val",
                                           "train.checkpoint.dir=" + run, "epochs=" + epochs, "train.log.every_steps=1",
                                           "train.log.progress=lines", "resample.points=256", "batch.size=8",
                                           "train.resume=auto"};
    for (const auto& s : sets) a.insert(a.end(), {"--set", s});
    return a;
  };
  const pid_t first = test::spawn_cli(args("400"), dir.path("first.out"), dir.path("first.err"));
  ASSERT_GT(first, 0);
  const auto deadline = Clock::now() + std::chrono::seconds(60);
  while (said_so_far(dir.path("first.err")).find("  step ") == std::string::npos && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_NE(said_so_far(dir.path("first.err")).find("  step "), std::string::npos) << "the first run never trained";
  const std::string facts = read_file(run + "/run.json");
  const auto t0 = Clock::now();
  const pid_t second = test::spawn_cli(args("3"), dir.path("second.out"), dir.path("second.err"));
  const int code = test::wait_cli(second);
  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  const std::string said = read_file(dir.path("second.err"));
  EXPECT_EQ(code, 1) << said;
  EXPECT_NE(said.find("error: " + run + ": in use by another run (pid " + std::to_string(first) + " on host "),
            std::string::npos)
      << said;
  EXPECT_NE(said.find("streamline run " + kTrainPipeline), std::string::npos) << "the first run's command is named\n" << said;
  EXPECT_EQ(said.find("  step "), std::string::npos) << "the second run trained\n" << said;
  EXPECT_EQ(said.find("resumed from"), std::string::npos) << said;
  EXPECT_LT(seconds, 10.0) << "stopped only after " << seconds << " s";
  EXPECT_EQ(read_file(run + "/run.json"), facts) << "the second run wrote the first's run facts";
  // The first is still training, and ends as asked (Ctrl-C: a checkpoint, exit 130).
  int st = 0;
  EXPECT_EQ(::waitpid(first, &st, WNOHANG), 0) << "the first run ended";
  ::kill(first, SIGINT);
  EXPECT_EQ(test::wait_cli(first), 130) << read_file(dir.path("first.err"));
  EXPECT_FALSE(latest_checkpoint(run).empty());
  // Free again: a resume starts.
  const pid_t third = test::spawn_cli(args("1"), dir.path("third.out"), dir.path("third.err"));
  EXPECT_EQ(test::wait_cli(third), 0) << read_file(dir.path("third.err"));
}

}  // namespace
}  // namespace sl
