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

}  // namespace sl
