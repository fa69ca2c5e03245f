#include "graph/atomic_file.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <set>

#include "graph/error.h"

namespace sl {

namespace {

[[noreturn]] void fail_write(const std::string& path, const std::string& what, int err) {
  throw WriteError(path + ": " + what + ": " + std::strerror(err));
}

bool write_all(int fd, const char* d, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, d, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    d += w;
    n -= (size_t)w;
  }
  return true;
}

// The length of the content up to its last '\n' (0 when it has none; `size` when unreadable).
off_t through_last_newline(int fd, off_t size) {
  char buf[4096];
  for (off_t end = size; end > 0;) {
    const off_t at = std::max<off_t>(0, end - (off_t)sizeof buf);
    const ssize_t r = ::pread(fd, buf, (size_t)(end - at), at);
    if (r != end - at) return size;
    for (ssize_t i = r - 1; i >= 0; --i)
      if (buf[i] == '\n') return at + i + 1;
    end = at;
  }
  return 0;
}

}  // namespace

void write_file_atomic(const std::string& path, std::string_view bytes) {
  write_file_atomic(path, &bytes, 1);
}

size_t remove_stale_temp_files(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  size_t removed = 0;
  const auto now = fs::file_time_type::clock::now();
  for (fs::directory_iterator it(dir.empty() ? "." : dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const size_t at = name.rfind(".tmp.sl");
    if (at == std::string::npos || at == 0 || at + 7 >= name.size()) continue;
    const std::string digits = name.substr(at + 7);
    if (digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos) continue;
    const long pid = std::stol(digits);
    if (pid <= 0 || pid == (long)::getpid()) continue;
    if (::kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;  // alive (or not ours to ask about)
    std::error_code e2;
    if (!it->is_regular_file(e2)) continue;
    const auto mtime = fs::last_write_time(it->path(), e2);
    if (e2 || now - mtime < std::chrono::minutes(1)) continue;  // another host's writer, maybe
    if (fs::remove(it->path(), e2)) ++removed;
  }
  return removed;
}

void write_file_atomic(const std::string& path, const std::string_view* pieces, size_t count) {
  {
    // Once per folder per process: a crashed earlier run's temporary files (see the header).
    static std::mutex mu;
    static std::set<std::string> swept;
    const std::string dir = std::filesystem::path(path).parent_path().string();
    bool first;
    {
      std::lock_guard<std::mutex> lock(mu);
      first = swept.insert(dir).second;
    }
    if (first) remove_stale_temp_files(dir);
  }
  const std::string tmp = path + ".tmp.sl" + std::to_string(::getpid());  // "sl": ours (see the sweep)
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail_write(path, "cannot create temporary file", errno);
  auto abort_with = [&](const char* what) {
    int e = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    fail_write(path, what, e);
  };
  for (size_t p = 0; p < count; ++p)
    if (!write_all(fd, pieces[p].data(), pieces[p].size())) abort_with("write failed");
  if (::fsync(fd) != 0) abort_with("fsync failed");
  if (::close(fd) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    fail_write(path, "close failed", e);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    fail_write(path, "rename failed", e);
  }
}

std::string read_file(const std::string& path) {
  std::error_code ec;
  auto st = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(st)) fail(path, "no such file");
  if (std::filesystem::is_directory(st)) fail(path, "is a directory, expected a file");
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(path, std::string("cannot open: ") + std::strerror(errno));
  std::string out;
  struct stat sb {};
  if (::fstat(fd, &sb) == 0 && sb.st_size > 0) out.reserve((size_t)sb.st_size);
  char buf[1 << 16];
  for (;;) {
    ssize_t r = ::read(fd, buf, sizeof buf);
    if (r < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      ::close(fd);
      fail(path, std::string("read failed: ") + std::strerror(e));
    }
    if (r == 0) break;
    out.append(buf, (size_t)r);
  }
  ::close(fd);
  return out;
}

AppendFile::~AppendFile() {
  if (fd_ >= 0) ::close(fd_);
}

void AppendFile::open(const std::string& path, bool truncate) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  path_ = path;
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | (truncate ? O_TRUNC : 0), 0644);
  if (fd < 0) fail_write(path, "cannot open for writing", errno);
  struct stat sb {};
  if (::fstat(fd, &sb) != 0) {
    const int e = errno;
    ::close(fd);
    fail_write(path, "cannot stat", e);
  }
  // A line cut short by a run killed while writing it is dropped: the next line starts a line
  // of its own instead of continuing it. Not a regular file (/dev/null, a pipe): written as it
  // comes, neither cut nor fsync'ed.
  regular_ = S_ISREG(sb.st_mode);
  const off_t size = regular_ ? through_last_newline(fd, sb.st_size) : 0;
  if (regular_ && size < sb.st_size && ::ftruncate(fd, size) != 0) {
    const int e = errno;
    ::close(fd);
    fail_write(path, "cannot cut its unfinished last line", e);
  }
  fd_ = fd;
  size_ = size;
}

void AppendFile::append(std::string_view line) {
  if (fd_ < 0) throw Error(path_ + ": not open for writing");
  size_t done = 0;
  while (done < line.size()) {
    const ssize_t w = regular_ ? ::pwrite(fd_, line.data() + done, line.size() - done, size_ + (off_t)done)
                               : ::write(fd_, line.data() + done, line.size() - done);
    if (w > 0) {
      done += (size_t)w;
      continue;
    }
    if (w < 0 && errno == EINTR) continue;
    const int e = w < 0 ? errno : EIO;
    if (regular_) {
      [[maybe_unused]] const int cut = ::ftruncate(fd_, size_);  // the part written is taken back
    }
    fail_write(path_, "write failed", e);
  }
  size_ += (off_t)done;
}

void AppendFile::sync() {
  if (fd_ >= 0 && regular_ && ::fsync(fd_) != 0) fail_write(path_, "fsync failed", errno);
}

void AppendFile::close() {
  if (fd_ < 0) return;
  const int fd = fd_;
  fd_ = -1;
  if (regular_ && ::fsync(fd) != 0) {
    const int e = errno;
    ::close(fd);
    fail_write(path_, "fsync failed", e);
  }
  if (::close(fd) != 0) fail_write(path_, "close failed", errno);
}

}  // namespace sl
