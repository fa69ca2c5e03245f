#include "graph/folder_lock.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <map>
#include <mutex>

#include "graph/atomic_file.h"
#include "graph/error.h"

namespace sl {

namespace {

namespace fs = std::filesystem;

std::mutex g_mu;
// This process's locks, by canonical folder. A forked child inherits the map, not the ownership:
// entries carry the pid that took them.
struct Held {
  pid_t pid;
  std::weak_ptr<FolderLock> lock;
};
std::map<std::string, Held> g_held;

std::string host_name() {
  char h[256] = {0};
  if (::gethostname(h, sizeof h - 1) != 0) return "?";
  return h;
}

std::string utc_now_text() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char b[32];
  std::strftime(b, sizeof b, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return b;
}

// What the holder wrote into the lock file, one line ("" when it has not written yet).
std::string holder_of(int fd) {
  char buf[4096];
  const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  if (n <= 0) return "";
  std::string s(buf, (size_t)n);
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  return s;
}

}  // namespace

std::shared_ptr<FolderLock> FolderLock::acquire(const std::string& dir, const std::string& command) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) fail(dir, "cannot create the folder: " + ec.message());
  std::string key = fs::weakly_canonical(fs::absolute(dir), ec).lexically_normal().string();
  while (key.size() > 1 && key.back() == '/') key.pop_back();
  std::lock_guard<std::mutex> guard(g_mu);
  if (auto it = g_held.find(key); it != g_held.end() && it->second.pid == ::getpid())
    if (auto held = it->second.lock.lock()) return held;
  const std::string path = (fs::path(dir) / kFolderLockName).string();
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) fail(path, std::string("cannot open the run folder's lock file: ") + std::strerror(errno));
  std::shared_ptr<FolderLock> lock(new FolderLock());
  lock->fd_ = fd;
  lock->dir_ = dir;
  struct flock fl {};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  int rc;
  do rc = ::fcntl(fd, F_OFD_SETLK, &fl);
  while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    const int e = errno;
    if (e == EAGAIN || e == EACCES) {
      const std::string who = holder_of(fd);
      throw Error(dir + ": in use by another run (" + (who.empty() ? "a process that has not yet said who it is" : who) +
                  "); two runs would interleave their checkpoints, metrics and reports in one folder: wait for it to "
                  "end, stop it, or give this run another folder (" + path + " is held while it runs)");
    }
    const std::string fs_name = shared_filesystem_of(dir);
    lock->note_ = dir + ": not locked (" + std::strerror(e) + (fs_name.empty() ? "" : ", on " + fs_name) +
                  "): a second run given this folder would not be stopped";
  } else {
    const std::string who = "pid " + std::to_string(::getpid()) + " on host " + host_name() + " since " + utc_now_text() +
                            ": " + command + "\n";
    // Best effort: the lock is what matters; the text only names the holder to a second run.
    if (::ftruncate(fd, 0) == 0) {
      [[maybe_unused]] const ssize_t w = ::pwrite(fd, who.data(), who.size(), 0);
    }
  }
  lock->key_ = key;  // registered: its destructor takes it out again
  g_held[key] = Held{::getpid(), lock};
  return lock;
}

FolderLock::~FolderLock() {
  if (!key_.empty()) {
    std::lock_guard<std::mutex> guard(g_mu);
    if (auto it = g_held.find(key_); it != g_held.end() && it->second.lock.expired()) g_held.erase(it);
  }
  if (fd_ >= 0) ::close(fd_);  // the lock goes with the last descriptor of its open file description
}

}  // namespace sl
