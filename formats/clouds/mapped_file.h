// A read-only view of a whole file, memory-mapped: the readers decode straight from the page
// cache in one pass instead of copying the file into a buffer first (see bench/results/pcd_read.md).
// A small file (up to kReadMax: a map tile, a scene) is read into memory instead: mapping it costs
// more than copying it (populating the page table, then madvise and munmap, each of which stops the
// other threads' cores to flush their TLBs), and a tiled map loads such files all the time.
#pragma once
#include <cstddef>
#include <string>

namespace sl {

class MappedFile {
 public:
  // Throws sl::Error naming the path when it is missing, a directory, not a regular file, or
  // cannot be opened/mapped. An empty file maps to data() == nullptr, size() == 0.
  explicit MappedFile(const std::string& path);
  // Only a header will be read (a point count, a LAS header and its VLRs, tile bounds): the file is
  // mapped without reading it ahead, so only the pages touched are read -- a scan of a map's tiles
  // reads their headers, not the whole map.
  struct HeaderOnly {};
  MappedFile(const std::string& path, HeaderOnly);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const char* data() const { return data_; }
  size_t size() const { return size_; }

  // The reader is done with bytes [0, upto): their pages leave this process's memory (they stay
  // in the page cache, and reading them again still works). Decoding a tile of hundreds of MB
  // then never holds the whole file and the whole decoded cloud at once. Cheap to call often:
  // only whole pages past the last release are dropped.
  void release(size_t upto) const;
  // The same for the whole pages inside [begin, end) alone, with no state: threads decoding
  // parts of one file each release their own part.
  void release_range(size_t begin, size_t end) const;

  // Files up to this size are read in ahead in one go (MAP_POPULATE: one bulk fault-in instead
  // of one page fault per 4 KiB); larger ones are faulted in as the reader goes, and released.
  static constexpr size_t kPopulateMax = size_t(64) << 20;
  // Files up to this size are read (pread) into a buffer, not mapped (see the top of this file).
  static constexpr size_t kReadMax = size_t(1) << 20;

 private:
  MappedFile(const std::string& path, bool header_only);
  const char* data_ = nullptr;
  size_t size_ = 0;
  bool mapped_ = false;  // data_ is a mapping (else a buffer of new[], or null)
  mutable size_t released_ = 0;
};

}  // namespace sl
