// Writes that fail: under a file size limit (RLIMIT_FSIZE, in a child process: the limit is the
// process's) with SIGXFSZ ignored as the CLI does, and on a full device (/dev/full). The error
// names the file and the reason; no temporary file and no half line are left behind.
#include "graph/atomic_file.h"

#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>

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

// A process that holds an open-file-description write lock on `path` (as write_file_atomic's
// writer does on its temporary file) until it is killed.
class LockHolder {
 public:
  explicit LockHolder(const std::string& path) {
    int ready[2];
    if (::pipe(ready) != 0) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT, 0644);
      struct flock fl {};
      fl.l_type = F_WRLCK;
      fl.l_whence = SEEK_SET;
      const char ok = fd >= 0 && ::fcntl(fd, F_OFD_SETLKW, &fl) == 0 ? 'y' : 'n';
      [[maybe_unused]] ssize_t w = ::write(ready[1], &ok, 1);
      for (;;) ::pause();
    }
    char ok = 'n';
    [[maybe_unused]] ssize_t r = ::read(ready[0], &ok, 1);
    locked_ = ok == 'y';
    ::close(ready[0]);
    ::close(ready[1]);
  }
  ~LockHolder() { kill(); }
  bool locked() const { return locked_; }
  void kill() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

 private:
  pid_t pid_ = -1;
  bool locked_ = false;
};

// A run killed outright leaves "<name>.tmp.sl<pid>". It is stale when no writer holds its lock,
// whatever its age and whoever has its pid now (pids are reused, in containers soon): the sweep
// removes it at once. A file a live writer holds stays, even an old one under a gone pid; other
// programs' look-alikes ("out.tmp.<pid>", "notes.tmp.txt") are never touched.
TEST(AtomicFile, AnUnlockedTemporaryFileIsStaleAtOnceAndALockedOneStaysWhateverItsAgeOrPid) {
  test::TempDir dir;
  const pid_t gone = ::fork();
  if (gone == 0) ::_exit(0);
  ::waitpid(gone, nullptr, 0);  // reaped: no process has this pid now
  const std::string g = std::to_string(gone), alive = std::to_string(::getppid());
  auto touch = [&](const std::string& name, int minutes_ago) {
    dir.write(name, "x");
    fs::last_write_time(dir.path(name), fs::file_time_type::clock::now() - std::chrono::minutes(minutes_ago));
  };
  touch("ckpt.safetensors.tmp.sl" + g, 5);  // stale: goes
  touch("fresh.json.tmp.sl" + g, 0);        // stale however young: goes
  touch("reused.json.tmp.sl" + alive, 0);   // its pid is some live process's now: still stale, goes
  touch("notes.tmp.txt", 5);                // not <name>.tmp.sl<digits>: stays
  touch("a.tmp.sl12x", 5);
  touch("script_out.tmp." + g, 5);          // a shell script's $$: not ours
  LockHolder writer(dir.path("live.json.tmp.sl" + g));  // old name, gone pid, but held: stays
  ASSERT_TRUE(writer.locked());
  fs::last_write_time(dir.path("live.json.tmp.sl" + g), fs::file_time_type::clock::now() - std::chrono::minutes(5));
  // One held by this very process (through another open file description): stays too.
  const std::string own = dir.path("own.json.tmp.sl" + std::to_string(::getpid()));
  const int own_fd = ::open(own.c_str(), O_WRONLY | O_CREAT, 0644);
  struct flock fl {};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  ASSERT_EQ(::fcntl(own_fd, F_OFD_SETLK, &fl), 0);

  EXPECT_EQ(remove_stale_temp_files(dir.path("")), 3u);
  for (const std::string& gone_name : {"ckpt.safetensors.tmp.sl" + g, "fresh.json.tmp.sl" + g, "reused.json.tmp.sl" + alive})
    EXPECT_FALSE(fs::exists(dir.path(gone_name))) << gone_name;
  for (const std::string& kept : {std::string("notes.tmp.txt"), std::string("a.tmp.sl12x"), "script_out.tmp." + g,
                                  "live.json.tmp.sl" + g, "own.json.tmp.sl" + std::to_string(::getpid())})
    EXPECT_TRUE(fs::exists(dir.path(kept))) << kept;
  // The writer killed: its lock went with it, and so does its file.
  writer.kill();
  ::close(own_fd);
  EXPECT_EQ(remove_stale_temp_files(dir.path("")), 2u);
  EXPECT_FALSE(fs::exists(dir.path("live.json.tmp.sl" + g)));
  EXPECT_FALSE(fs::exists(own));
}

// On a filesystem whose locks may not reach another host (NFS, SMB, FUSE...), an unlocked file is
// only stale once it has not changed for a minute: it may be a live writer's elsewhere.
TEST(AtomicFile, OnASharedFilesystemAnUnlockedFileMustAlsoBeAMinuteOld) {
  test::TempDir dir;
  EXPECT_EQ(shared_filesystem_of(dir.path("")), "") << "the test folder is expected on a local filesystem";
  const std::string fresh = dir.write("a.json.tmp.sl123", "x"), old = dir.write("b.json.tmp.sl123", "x");
  fs::last_write_time(old, fs::file_time_type::clock::now() - std::chrono::seconds(90));
  EXPECT_FALSE(remove_temp_file_if_stale(fresh, true));
  EXPECT_TRUE(fs::exists(fresh));
  EXPECT_TRUE(remove_temp_file_if_stale(old, true));
  EXPECT_FALSE(fs::exists(old));
  EXPECT_TRUE(remove_temp_file_if_stale(fresh, false));  // locally the lock alone decides
  EXPECT_FALSE(fs::exists(fresh));
  // Held, even old: stays on both.
  const std::string held = dir.path("c.json.tmp.sl123");
  LockHolder writer(held);
  ASSERT_TRUE(writer.locked());
  fs::last_write_time(held, fs::file_time_type::clock::now() - std::chrono::minutes(5));
  EXPECT_FALSE(remove_temp_file_if_stale(held, true));
  EXPECT_FALSE(remove_temp_file_if_stale(held, false));
  EXPECT_TRUE(fs::exists(held));
}

// The commands sweep their folders with subfolders; write_file_atomic sweeps the folder it writes
// into once per process.
TEST(AtomicFile, TheSweepReachesSubfoldersAndTheFirstWriteIntoAFolderSweepsIt) {
  test::TempDir dir;
  fs::create_directories(dir.path("a/b"));
  dir.write("a/b/step_00000002.safetensors.tmp.sl77", "x");
  dir.write("a/run.json.tmp.sl78", "x");
  dir.write("top.tmp.sl79", "x");
  EXPECT_EQ(remove_stale_temp_files(dir.path("a"), false), 1u);  // a/run.json's only
  EXPECT_TRUE(fs::exists(dir.path("a/b/step_00000002.safetensors.tmp.sl77")));
  EXPECT_EQ(remove_stale_temp_files(dir.path(""), true), 2u);
  EXPECT_FALSE(fs::exists(dir.path("a/b/step_00000002.safetensors.tmp.sl77")));
  EXPECT_EQ(remove_stale_temp_files(dir.path("no/such/folder"), true), 0u);
  test::TempDir other;
  fs::create_directories(other.path("sub"));
  other.write("sub/run.json.tmp.sl4", "x");
  write_file_atomic(other.path("sub/run.json"), "{}");
  EXPECT_FALSE(fs::exists(other.path("sub/run.json.tmp.sl4")));
  EXPECT_EQ(read_file(other.path("sub/run.json")), "{}");
}

// Whether a process holds a write lock on `path` (what the sweep asks, without taking a lock).
bool held_by_a_writer(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct flock fl {};
  fl.l_type = F_RDLCK;
  fl.l_whence = SEEK_SET;
  const bool held = ::fcntl(fd, F_OFD_GETLK, &fl) == 0 && fl.l_type != F_UNLCK;
  ::close(fd);
  return held;
}

// The writer's own lock, seen from outside: a child writes a large file again and again; stopped
// (SIGSTOP) in the middle of a write, its temporary file survives every sweep; killed, it goes
// with the next one, at once.
TEST(AtomicFile, AWriteInProgressIsNeverSweptAndAKilledOnesFileGoesAtOnce) {
  test::TempDir dir;
  const std::string path = dir.path("step_00000001.safetensors");
  const pid_t child = ::fork();
  if (child == 0) {
    const std::string big(8 << 20, 'w');
    for (;;) write_file_atomic(path, big);
  }
  const std::string tmp = path + ".tmp.sl" + std::to_string(child);
  bool caught = false;
  for (int tries = 0; tries < 2000 && !caught; ++tries) {
    if (!fs::exists(tmp)) {
      std::this_thread::sleep_for(std::chrono::microseconds(500));
      continue;
    }
    ::kill(child, SIGSTOP);
    // Stopped where it is: in the write when its temporary file is there now and locked (between
    // the file's creation and its lock the writer is not yet protected: a sweep then may remove it,
    // and the writer makes it again).
    int st = 0;
    ::waitpid(child, &st, WUNTRACED);
    if (fs::exists(tmp) && held_by_a_writer(tmp)) caught = true;
    else ::kill(child, SIGCONT);
  }
  ASSERT_TRUE(caught) << "the child's write was never caught in progress";
  for (int i = 0; i < 3; ++i) EXPECT_EQ(remove_stale_temp_files(dir.path(""), true), 0u);
  EXPECT_TRUE(fs::exists(tmp)) << "a live writer's temporary file was swept";
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  EXPECT_EQ(remove_stale_temp_files(dir.path(""), true), 1u);
  EXPECT_FALSE(fs::exists(tmp));
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
