// The run folder's lock (graph/folder_lock.h): one process at a time, the holder named to the
// second, shared within a process, and gone with a holder killed outright.
#include "graph/folder_lock.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <string>

#include "graph/atomic_file.h"
#include "graph/error.h"
#include "tests/formats/clouds/io_test_util.h"

namespace sl {
namespace {

namespace fs = std::filesystem;

// acquire() in a child process: "ok" or the error's text.
std::string acquire_in_child(const test::TempDir& tmp, const std::string& dir) {
  const std::string msg = tmp.path("child_says.txt");
  fs::remove(msg);
  const pid_t pid = ::fork();
  if (pid == 0) {
    std::string what = "ok";
    try {
      auto l = FolderLock::acquire(dir, "child command");
    } catch (const Error& e) {
      what = e.what();
    }
    try {
      write_file_atomic(msg, what);
    } catch (...) {
      ::_exit(3);
    }
    ::_exit(0);
  }
  int st = 0;
  ::waitpid(pid, &st, 0);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) return "child failed";
  return read_file(msg);
}

TEST(FolderLock, ASecondProcessIsRefusedWithTheHoldersPidAndCommandUntilTheLockGoes) {
  test::TempDir tmp;
  const std::string dir = tmp.path("runs/a");  // created by acquire
  auto lock = FolderLock::acquire(dir, "streamline run p.json --set x=1");
  ASSERT_TRUE(lock->note().empty()) << lock->note();
  EXPECT_TRUE(fs::exists(dir + "/" + kFolderLockName));
  // The same process shares its lock (the CLI and its trainer both take it).
  EXPECT_EQ(FolderLock::acquire(dir + "/", "other").get(), lock.get());
  const std::string said = acquire_in_child(tmp, dir);
  EXPECT_EQ(said.rfind(dir + ": in use by another run (pid " + std::to_string(::getpid()) + " on host ", 0), 0u) << said;
  EXPECT_NE(said.find(": streamline run p.json --set x=1)"), std::string::npos) << said;
  // Another folder is free.
  EXPECT_EQ(acquire_in_child(tmp, tmp.path("runs/b")), "ok");
  lock.reset();
  EXPECT_EQ(acquire_in_child(tmp, dir), "ok");
  // Acquired again after a release: a new lock.
  auto again = FolderLock::acquire(dir, "third");
  EXPECT_TRUE(again->note().empty());
}

// A holder killed outright (SIGKILL) does not block the next run: the kernel dropped its lock.
TEST(FolderLock, AHolderKilledOutrightLeavesTheFolderFree) {
  test::TempDir tmp;
  const std::string dir = tmp.path("run");
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    try {
      auto l = FolderLock::acquire(dir, "doomed");
      [[maybe_unused]] ssize_t w = ::write(ready[1], "y", 1);
      for (;;) ::pause();
    } catch (...) {
      ::_exit(3);
    }
  }
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ::close(ready[0]);
  ::close(ready[1]);
  EXPECT_NE(acquire_in_child(tmp, dir).find("in use by another run (pid " + std::to_string(pid) + " "), std::string::npos);
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  auto lock = FolderLock::acquire(dir, "the resume");
  EXPECT_TRUE(lock->note().empty());
  EXPECT_NE(read_file(dir + "/" + kFolderLockName).find("pid " + std::to_string(::getpid()) + " on host "), std::string::npos)
      << "the lock file names its new holder";
}

TEST(FolderLock, AFolderThatCannotBeCreatedIsAnErrorNamingIt) {
  test::TempDir tmp;
  tmp.write("file", "x");
  try {
    FolderLock::acquire(tmp.path("file/run"), "x");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind(tmp.path("file/run") + ": cannot create the folder: ", 0), 0u) << e.what();
  }
}

}  // namespace
}  // namespace sl
