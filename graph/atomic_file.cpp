#include "graph/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "graph/error.h"

namespace sl {

void write_file_atomic(const std::string& path, std::string_view bytes) {
  write_file_atomic(path, &bytes, 1);
}

void write_file_atomic(const std::string& path, const std::string_view* pieces, size_t count) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail(path, std::string("cannot create temporary file: ") + std::strerror(errno));
  auto abort_with = [&](const char* what) {
    int e = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    fail(path, std::string(what) + ": " + std::strerror(e));
  };
  for (size_t p = 0; p < count; ++p) {
    const char* d = pieces[p].data();
    size_t left = pieces[p].size();
    while (left > 0) {
      ssize_t w = ::write(fd, d, left);
      if (w < 0) {
        if (errno == EINTR) continue;
        abort_with("write failed");
      }
      d += w;
      left -= (size_t)w;
    }
  }
  if (::fsync(fd) != 0) abort_with("fsync failed");
  if (::close(fd) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    fail(path, std::string("close failed: ") + std::strerror(e));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    fail(path, std::string("rename failed: ") + std::strerror(e));
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

}  // namespace sl
