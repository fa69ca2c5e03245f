// A read-only view of a whole file, memory-mapped: the readers decode straight from the page
// cache in one pass instead of copying the file into a buffer first (see bench/results/pcd_read.md).
#pragma once
#include <cstddef>
#include <string>

namespace sl {

class MappedFile {
 public:
  // Throws sl::Error naming the path when it is missing, a directory, not a regular file, or
  // cannot be opened/mapped. An empty file maps to data() == nullptr, size() == 0.
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const char* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  const char* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace sl
