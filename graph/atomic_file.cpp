#include "graph/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>
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

// The writer's lock on its temporary file (the header): a write lock over the whole file, held
// by the open file description, so it lasts while any descriptor of it is open and the kernel
// drops it when the process dies. False where the filesystem has no such locks.
bool lock_for_writing(int fd) {
  struct flock fl {};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  for (;;) {
    if (::fcntl(fd, F_OFD_SETLKW, &fl) == 0) return true;
    if (errno != EINTR) return false;
  }
}

bool same_file(const struct stat& a, const struct stat& b) { return a.st_dev == b.st_dev && a.st_ino == b.st_ino; }

// "<name>.tmp.sl<digits>": a temporary file of ours (the header).
bool is_our_temp_name(const std::string& name) {
  const size_t at = name.rfind(".tmp.sl");
  if (at == std::string::npos || at == 0 || at + 7 >= name.size()) return false;
  const std::string digits = name.substr(at + 7);
  return digits.size() <= 9 && digits.find_first_not_of("0123456789") == std::string::npos;
}

constexpr std::chrono::seconds kOtherHostGuard{60};

}  // namespace

void write_file_atomic(const std::string& path, std::string_view bytes) {
  write_file_atomic(path, &bytes, 1);
}

std::string shared_filesystem_of(const std::string& dir) {
  struct statfs sf {};
  if (::statfs(dir.empty() ? "." : dir.c_str(), &sf) != 0) return "";
  // The magic numbers of <linux/magic.h> and the filesystems' own headers.
  switch ((unsigned long)sf.f_type) {
    case 0x6969UL: return "nfs";
    case 0x517BUL: return "smb";
    case 0xFF534D42UL: return "cifs";
    case 0xFE534D42UL: return "smb2";
    case 0x65735546UL: return "fuse";
    case 0x00C36400UL: return "ceph";
    case 0x0BD00BD0UL: return "lustre";
    case 0x47504653UL: return "gpfs";
    case 0x01021997UL: return "9p";
    case 0x5346414FUL: case 0x6B414653UL: return "afs";
    case 0x73757245UL: return "coda";
    case 0x01161970UL: return "gfs2";
    case 0x7461636FUL: return "ocfs2";
    default: return "";
  }
}

bool remove_temp_file_if_stale(const std::string& path, bool shared_fs) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) return false;
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat opened {};
  if (::fstat(fd, &opened) != 0 || !S_ISREG(opened.st_mode)) return false;
  // A read lock is refused while a writer holds its write lock: that writer is alive.
  struct flock fl {};
  fl.l_type = F_RDLCK;
  fl.l_whence = SEEK_SET;
  bool cannot_tell = false;
  if (::fcntl(fd, F_OFD_SETLK, &fl) != 0) {
    if (errno == EAGAIN || errno == EACCES || errno == EINTR) return false;  // held: a live writer's
    cannot_tell = true;  // no such locks on this filesystem: only the age can speak
  }
  if (shared_fs || cannot_tell) {
    const auto age = std::chrono::system_clock::now() - std::chrono::system_clock::from_time_t(opened.st_mtime);
    if (age < kOtherHostGuard) return false;
  }
  // Still the file opened (a writer may have made a new one of that name since)? Holding the lock,
  // no writer of ours can take this one until it is gone.
  struct stat now {};
  if (::lstat(path.c_str(), &now) != 0 || !same_file(now, opened)) return false;
  return ::unlink(path.c_str()) == 0;
}

size_t remove_stale_temp_files(const std::string& dir, bool recursive) {
  namespace fs = std::filesystem;
  std::error_code ec;
  size_t removed = 0;
  std::map<std::string, bool> shared;  // per folder: its filesystem's locks may not reach other hosts
  auto consider = [&](const fs::directory_entry& e) {
    if (!is_our_temp_name(e.path().filename().string())) return;
    std::error_code e2;
    if (!e.is_regular_file(e2) || e.is_symlink(e2)) return;
    const std::string parent = e.path().parent_path().string();
    auto it = shared.find(parent);
    if (it == shared.end()) it = shared.emplace(parent, !shared_filesystem_of(parent).empty()).first;
    if (remove_temp_file_if_stale(e.path().string(), it->second)) ++removed;
  };
  const fs::path root = dir.empty() ? fs::path(".") : fs::path(dir);
  if (recursive) {
    for (fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec), end;
         !ec && it != end; it.increment(ec))
      consider(*it);
  } else {
    for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) consider(*it);
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
  int fd = -1;
  // Created, then locked; a sweep that came between the two (it found the file unlocked) may have
  // removed it: then it is made again. The sweep holds its own lock while it removes a file, so once
  // this one holds the lock on the file at `tmp`, the file stays until it is renamed.
  for (int attempt = 0;; ++attempt) {
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) fail_write(path, "cannot create temporary file", errno);
    if (!lock_for_writing(fd)) break;  // no locks here: written unlocked (the sweep's age guard stands in)
    struct stat mine {}, named {};
    if (::fstat(fd, &mine) == 0 && ::stat(tmp.c_str(), &named) == 0 && same_file(mine, named)) break;
    ::close(fd);
    if (attempt == 100) fail_write(path, "temporary file " + tmp + " keeps disappearing", ENOENT);
  }
  // The lock must outlive the close that reports a failed write-back, until the rename: a second
  // descriptor of the same open file description keeps it.
  const int held = ::dup(fd);
  auto abort_with = [&](const char* what) {
    int e = errno;
    ::unlink(tmp.c_str());
    ::close(fd);
    if (held >= 0) ::close(held);
    fail_write(path, what, e);
  };
  if (held < 0) abort_with("cannot duplicate the temporary file's descriptor");
  for (size_t p = 0; p < count; ++p)
    if (!write_all(fd, pieces[p].data(), pieces[p].size())) abort_with("write failed");
  if (::fsync(fd) != 0) abort_with("fsync failed");
  if (::close(fd) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    ::close(held);
    fail_write(path, "close failed", e);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    ::close(held);
    fail_write(path, "rename failed", e);
  }
  ::close(held);  // the lock goes with it
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
