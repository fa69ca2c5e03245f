// Memory hints for the large arrays of the data path.
#pragma once
#include <cstddef>

namespace sl {

// Asks the kernel to back the whole 2 MiB pages inside [p, p + bytes) with transparent huge
// pages (Linux, THP in "madvise" or "always" mode): one page fault per 2 MiB instead of one per
// 4 KiB while the array is first written. For the large arrays of a large tile (a decoded
// column, a grid index); does nothing below 8 MiB or where unsupported. Call it before the
// first write.
void advise_huge_pages(void* p, size_t bytes);

// Process-wide (glibc): blocks up to 32 MiB come from the heap instead of fresh mappings, and
// freed heap memory is kept up to 256 MiB instead of being given back at once. A data path
// allocates and frees the same buffers for every scene (its decoded columns, ~1.5 MiB for a
// 100k-point scan, its grid index): by default glibc maps blocks over 128 KiB afresh and unmaps
// them when freed, so the kernel faulted in and zeroed every one of them again for each scene
// (~40% of the kernel cycles of a preprocess run; bench/results/preprocess.md). Larger blocks (a
// mapping tile's columns) are still mapped and returned. Called by the programs that run
// pipelines (the CLI, the benchmarks); a library embedding the engine decides for its process.
// Returns false where it is not supported (not glibc) or was refused.
bool keep_freed_memory();

}  // namespace sl
