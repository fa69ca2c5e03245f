#include "stages/io/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "graph/error.h"

namespace sl {

MappedFile::MappedFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) fail(path, "no such file");
    fail(path, std::string("cannot open: ") + std::strerror(errno));
  }
  struct stat sb {};
  if (::fstat(fd, &sb) != 0) {
    int e = errno;
    ::close(fd);
    fail(path, std::string("cannot stat: ") + std::strerror(e));
  }
  if (S_ISDIR(sb.st_mode)) {
    ::close(fd);
    fail(path, "is a directory, expected a file");
  }
  if (!S_ISREG(sb.st_mode)) {
    ::close(fd);
    fail(path, "not a regular file");
  }
  size_ = (size_t)sb.st_size;
  if (size_ > 0) {
    // MAP_POPULATE: one bulk fault-in instead of one page fault per 4 KiB while decoding.
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
    if (p == MAP_FAILED) {
      int e = errno;
      ::close(fd);
      fail(path, std::string("cannot map: ") + std::strerror(e));
    }
    data_ = static_cast<const char*>(p);
  }
  ::close(fd);  // the mapping stays valid after close
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(const_cast<char*>(data_), size_);
}

}  // namespace sl
