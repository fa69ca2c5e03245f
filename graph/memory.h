// How a streamline process asks the C library's allocator to behave.
#pragma once
#include <cstddef>
#include <string>

namespace sl {

// glibc's malloc by default serves blocks above 128 KiB with mmap and gives freed memory at the
// top of a heap back to the kernel. A data path that decodes a scene (four columns of ~400 KB),
// indexes it and drops it, scene after scene, then pays a page fault and a page clear for
// every 4 KiB of every scene: measured on the preprocess benchmark, 27% of the run's cycles
// were in the kernel, and with the settings below 19% (bench/results/preprocess.md). This
// keeps blocks up to 64 MiB in the heaps and freed memory up to 256 MiB for reuse. Called by
// the streamline CLI and the benchmarks before any work; a library user decides for their own
// process. Does nothing when GLIBC_TUNABLES already sets a malloc tunable (the user's choice
// wins) or the C library is not glibc. Returns what it did, for `streamline doctor`.
std::string tune_allocator();

// What tune_allocator() did in this process ("" before it was called).
const std::string& allocator_tuning();

// Asks the kernel to back the whole 2 MiB pages inside [p, p + bytes) with transparent huge
// pages (Linux, THP in "madvise" or "always" mode): one page fault per 2 MiB instead of one per
// 4 KiB while the array is first written. For the large arrays of a large tile (a decoded
// column, a grid index); does nothing below 8 MiB or where unsupported. Call it before the
// first write.
void advise_huge_pages(void* p, size_t bytes);

}  // namespace sl
