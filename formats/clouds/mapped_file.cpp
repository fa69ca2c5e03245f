#include "formats/clouds/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include "graph/error.h"

namespace sl {

MappedFile::MappedFile(const std::string& path) : MappedFile(path, false) {}
MappedFile::MappedFile(const std::string& path, HeaderOnly) : MappedFile(path, true) {}

MappedFile::MappedFile(const std::string& path, bool header_only) {
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
  if (size_ > 0 && size_ <= kReadMax && !header_only) {
    std::unique_ptr<char[]> buf(new char[size_]);
    size_t got = 0;
    while (got < size_) {
      const ssize_t r = ::pread(fd, buf.get() + got, size_ - got, (off_t)got);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) {
        const int e = r < 0 ? errno : 0;
        ::close(fd);
        fail(path, e ? std::string("cannot read: ") + std::strerror(e)
                     : "shrank while being read (" + std::to_string(got) + " of " + std::to_string(size_) + " bytes)");
      }
      got += (size_t)r;
    }
    data_ = buf.release();
  } else if (size_ > 0) {
    const bool populate = size_ <= kPopulateMax && !header_only;
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE | (populate ? MAP_POPULATE : 0), fd, 0);
    if (p == MAP_FAILED) {
      int e = errno;
      ::close(fd);
      fail(path, std::string("cannot map: ") + std::strerror(e));
    }
    data_ = static_cast<const char*>(p);
    mapped_ = true;
    if (size_ > kPopulateMax && !header_only) ::madvise(p, size_, MADV_SEQUENTIAL);  // a hint: read-ahead, drop behind
  }
  ::close(fd);  // the mapping stays valid after close
}

void MappedFile::release(size_t upto) const {
  static const size_t page = (size_t)::sysconf(_SC_PAGESIZE);
  upto = std::min(upto, size_) / page * page;
  if (!mapped_ || upto <= released_) return;
  // The mapping starts on a page boundary, so [released_, upto) is whole pages.
  ::madvise(const_cast<char*>(data_) + released_, upto - released_, MADV_DONTNEED);
  released_ = upto;
}

void MappedFile::release_range(size_t begin, size_t end) const {
  static const size_t page = (size_t)::sysconf(_SC_PAGESIZE);
  begin = (begin + page - 1) / page * page, end = std::min(end, size_) / page * page;
  if (mapped_ && end > begin) ::madvise(const_cast<char*>(data_) + begin, end - begin, MADV_DONTNEED);
}

MappedFile::~MappedFile() {
  if (mapped_) ::munmap(const_cast<char*>(data_), size_);
  else delete[] data_;
}

}  // namespace sl
