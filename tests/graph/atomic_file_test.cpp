// Writes that fail: under a file size limit (RLIMIT_FSIZE, in a child process: the limit is the
// process's) with SIGXFSZ ignored as the CLI does, and on a full device (/dev/full). The error
// names the file and the reason; no temporary file and no half line are left behind.
#include "graph/atomic_file.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>

#include "graph/error.h"
#include "tests/formats/clouds/io_test_util.h"

namespace sl {
namespace {

namespace fs = std::filesystem;

// Runs `body` in a child process limited to files of `limit` bytes; returns what it wrote to its
// message file ("" when body returned without throwing), or "died: signal N".
std::string in_child_with_file_limit(const test::TempDir& dir, rlim_t limit, const std::function<void()>& body) {
  const std::string msg = dir.path("child_message.txt");
  fs::remove(msg);
  const pid_t pid = ::fork();
  if (pid == 0) {
    std::signal(SIGXFSZ, SIG_IGN);
    const rlimit rl{limit, limit};
    if (::setrlimit(RLIMIT_FSIZE, &rl) != 0) ::_exit(3);
    std::string what;
    try {
      body();
    } catch (const WriteError& e) {
      what = std::string("WriteError: ") + e.what();
    } catch (const std::exception& e) {
      what = std::string("other: ") + e.what();
    }
    // The message itself is short: far below the limit.
    FILE* f = std::fopen(msg.c_str(), "w");
    if (!f) ::_exit(4);
    std::fputs(what.c_str(), f);
    std::fclose(f);
    ::_exit(0);
  }
  int st = 0;
  ::waitpid(pid, &st, 0);
  if (WIFSIGNALED(st)) return "died: signal " + std::to_string(WTERMSIG(st));
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) return "child failed: " + std::to_string(WEXITSTATUS(st));
  return read_file(msg);
}

std::vector<std::string> leftovers(const test::TempDir& dir) {
  std::vector<std::string> tmp;
  for (const auto& e : fs::directory_iterator(dir.path("")))
    if (e.path().filename().string().find(".tmp.") != std::string::npos) tmp.push_back(e.path().string());
  return tmp;
}

// A run killed outright leaves "<name>.tmp.sl<pid>": a later process's first write into that folder
// removes it when the pid is gone and the file is over a minute old; a live process's, a fresh
// one (maybe another host's writer) and other programs' look-alikes ("out.tmp.<pid>") stay.
TEST(AtomicFile, ACrashedRunsTemporaryFilesGoWithTheNextWriteIntoTheirFolder) {
  test::TempDir dir;
  const pid_t gone = ::fork();
  if (gone == 0) ::_exit(0);
  ::waitpid(gone, nullptr, 0);  // reaped: no process has this pid now
  const std::string g = std::to_string(gone);
  auto touch = [&](const std::string& name, int minutes_ago) {
    write_file_atomic(dir.path(name + ".seed"), "x");
    fs::rename(dir.path(name + ".seed"), dir.path(name));
    fs::last_write_time(dir.path(name), fs::file_time_type::clock::now() - std::chrono::minutes(minutes_ago));
  };
  touch("ckpt.safetensors.tmp.sl" + g, 5);                              // stale: goes
  touch("metrics.json.tmp.sl" + g, 5);                                  // stale: goes
  touch("fresh.json.tmp.sl" + g, 0);                                    // under a minute: stays
  touch("live.json.tmp.sl" + std::to_string(::getppid()), 5);          // its writer is alive: stays
  touch("notes.tmp.txt", 5);                                          // not <name>.tmp.<pid>: stays
  touch("a.tmp.12x", 5);
  touch("script_out.tmp." + g, 5);                                    // a shell script's $$: not ours
  EXPECT_EQ(remove_stale_temp_files(dir.path("")), 2u);
  EXPECT_FALSE(fs::exists(dir.path("ckpt.safetensors.tmp.sl" + g)));
  EXPECT_FALSE(fs::exists(dir.path("metrics.json.tmp.sl" + g)));
  for (const std::string& kept : {std::string("notes.tmp.txt"), std::string("a.tmp.12x"), "script_out.tmp." + g})
    EXPECT_TRUE(fs::exists(dir.path(kept))) << kept;
  EXPECT_TRUE(fs::exists(dir.path("fresh.json.tmp.sl" + g)));
  EXPECT_TRUE(fs::exists(dir.path("live.json.tmp.sl" + std::to_string(::getppid()))));
  // Through write_file_atomic: the first write into a folder in this process sweeps it.
  test::TempDir other;
  write_file_atomic(other.path("x.seed"), "x");
  fs::rename(other.path("x.seed"), other.path("run.json.tmp.sl" + g));
  fs::last_write_time(other.path("run.json.tmp.sl" + g), fs::file_time_type::clock::now() - std::chrono::minutes(2));
  fs::create_directories(other.path("sub"));
  fs::rename(other.path("run.json.tmp.sl" + g), other.path("sub/run.json.tmp.sl" + g));
  write_file_atomic(other.path("sub/run.json"), "{}");
  EXPECT_FALSE(fs::exists(other.path("sub/run.json.tmp.sl" + g)));
  EXPECT_EQ(read_file(other.path("sub/run.json")), "{}");
}

TEST(AtomicFile, BeyondTheFileSizeLimitTheWriteFailsWithEfbigAndTheOldFileStaysWhole) {
  test::TempDir dir;
  const std::string path = dir.path("step_00000010.safetensors");
  const std::string old(3000, 'o');
  write_file_atomic(path, old);
  const std::string big(200000, 'n');
  const std::string what = in_child_with_file_limit(dir, 100000, [&] { write_file_atomic(path, big); });
  EXPECT_EQ(what, "WriteError: " + path + ": write failed: " + std::strerror(EFBIG));
  EXPECT_EQ(read_file(path), old);
  EXPECT_TRUE(leftovers(dir).empty());
  // Under the limit, the same call writes.
  EXPECT_EQ(in_child_with_file_limit(dir, 300000, [&] { write_file_atomic(path, big); }), "");
  EXPECT_EQ(read_file(path), big);
  // Several pieces (the checkpoint writer's form): the same.
  const std::string_view pieces[3] = {big, big, big};
  EXPECT_EQ(in_child_with_file_limit(dir, 500000, [&] { write_file_atomic(path, pieces, 3); }),
            "WriteError: " + path + ": write failed: " + std::strerror(EFBIG));
  EXPECT_EQ(read_file(path), big);
  EXPECT_TRUE(leftovers(dir).empty());
}

// Without SIGXFSZ ignored the process dies mid-file: what the CLI avoids.
TEST(AtomicFile, WithSigxfszAtItsDefaultTheLimitKillsTheProcess) {
  test::TempDir dir;
  const std::string path = dir.path("big.bin");
  const std::string what = in_child_with_file_limit(dir, 1000, [&] {
    std::signal(SIGXFSZ, SIG_DFL);
    write_file_atomic(path, std::string(5000, 'x'));
  });
  EXPECT_EQ(what, "died: signal " + std::to_string(SIGXFSZ));
}

TEST(AppendFile, ALineThatDoesNotFitIsTakenBackAndTheErrorNamesTheFile) {
  test::TempDir dir;
  const std::string path = dir.path("metrics.jsonl");
  const std::string line = "{\"type\":\"train\",\"step\":10,\"loss\":0.125}\n";  // 40 bytes
  ASSERT_EQ(line.size(), 40u);
  const std::string what = in_child_with_file_limit(dir, 1000, [&] {
    AppendFile f;
    f.open(path, true);
    for (int i = 0; i < 100; ++i) f.append(line);
  });
  EXPECT_EQ(what, "WriteError: " + path + ": write failed: " + std::strerror(EFBIG));
  // 25 whole lines fill the 1000 bytes exactly; the 26th is refused, nothing of it stays.
  const std::string text = read_file(path);
  EXPECT_EQ(text.size(), 1000u);
  std::string expect;
  for (int i = 0; i < 25; ++i) expect += line;
  EXPECT_EQ(text, expect);
  // A limit that cuts a line in the middle: the part written is taken back.
  const std::string what2 = in_child_with_file_limit(dir, 1020, [&] {
    AppendFile f;
    f.open(path, false);
    f.append(line);
  });
  EXPECT_EQ(what2, "WriteError: " + path + ": write failed: " + std::strerror(EFBIG));
  EXPECT_EQ(read_file(path), expect);
}

TEST(AppendFile, OnAFullDeviceTheErrorIsNoSpaceLeft) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  AppendFile f;
  f.open("/dev/full", false);
  try {
    f.append("{\"step\":1}\n");
    FAIL() << "no error";
  } catch (const WriteError& e) {
    EXPECT_EQ(std::string(e.what()), std::string("/dev/full: write failed: ") + std::strerror(ENOSPC));
  }
}

// Not a regular file (train.log.metrics=/dev/null): written without fsync, which such files refuse.
TEST(AppendFile, ToDevNullLinesGoAndSyncAndCloseSucceed) {
  if (!fs::exists("/dev/null")) GTEST_SKIP() << "no /dev/null";
  AppendFile f;
  f.open("/dev/null", false);
  for (int i = 0; i < 3; ++i) f.append("{\"step\":1}\n");
  EXPECT_NO_THROW(f.sync());
  EXPECT_NO_THROW(f.close());
  EXPECT_FALSE(f.is_open());
}

// A run killed while writing a line left it unfinished: the next run that appends drops it, so
// its first line does not continue the broken one; whole lines before it stay.
TEST(AppendFile, AppendingDropsAnUnfinishedLastLineAndKeepsTheWholeOnes) {
  test::TempDir dir;
  const std::string path = dir.path("metrics.jsonl");
  const std::string whole = "{\"step\":1}\n{\"step\":2}\n";
  for (const std::string& tail : {std::string("{\"step\":3,\"lo"), std::string(10000, 'x'), std::string()}) {
    write_file_atomic(path, whole + tail);
    AppendFile f;
    f.open(path, false);
    f.append("{\"step\":3}\n");
    f.close();
    EXPECT_EQ(read_file(path), whole + "{\"step\":3}\n") << tail.size();
  }
  write_file_atomic(path, "no newline at all");
  AppendFile f;
  f.open(path, false);
  f.append("{\"step\":1}\n");
  EXPECT_EQ(read_file(path), "{\"step\":1}\n");
  f.open(path, true);  // truncate: a fresh run
  EXPECT_EQ(read_file(path), "");
}

}  // namespace
}  // namespace sl
