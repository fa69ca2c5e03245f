// The CLI as a user runs it, for the tests of tests/apps: the built binary (SL_CLI_PATH) in a
// shell or as a child process, its exit and its output.
#pragma once
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "graph/atomic_file.h"
#include "tests/formats/clouds/io_test_util.h"

namespace sl::test {

struct Ran {
  int code = -1;  // the exit status; -1 when a signal ended it
  std::string out, err;
};

// Runs `streamline <args>` with stdout and stderr captured into files of `dir`.
inline Ran run_cli(const TempDir& dir, const std::string& args) {
  const std::string out = dir.path("stdout.txt"), err = dir.path("stderr.txt");
  const std::string cmd = std::string("'") + SL_CLI_PATH + "' " + args + " >'" + out + "' 2>'" + err + "'";
  const int st = std::system(cmd.c_str());
  Ran r;
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  r.out = read_file(out);
  r.err = read_file(err);
  return r;
}

inline std::string q(const std::string& s) { return "'" + s + "'"; }

// Starts `streamline <args...>` as a child whose stdout and stderr go to `out` and `err`;
// `in_child` runs in the child before the exec (a resource limit, a signal disposition).
inline pid_t spawn_cli(const std::vector<std::string>& args, const std::string& out, const std::string& err,
                       const std::function<void()>& in_child = {}) {
  std::vector<std::string> all = {SL_CLI_PATH};
  all.insert(all.end(), args.begin(), args.end());
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  if (!std::freopen(out.c_str(), "w", stdout) || !std::freopen(err.c_str(), "w", stderr)) ::_exit(126);
  if (in_child) in_child();
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  ::execv(SL_CLI_PATH, argv.data());
  ::_exit(127);
}

// Waits for a spawned child: its exit status, or -1 with *signal set when a signal ended it.
inline int wait_cli(pid_t pid, int* signal = nullptr) {
  int st = 0;
  ::waitpid(pid, &st, 0);
  if (signal) *signal = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

}  // namespace sl::test
