#include "graph/memory.h"

#include <sys/mman.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <cstdint>

namespace sl {

void advise_huge_pages(void* p, size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  constexpr uintptr_t kHuge = uintptr_t(2) << 20;
  if (!p || bytes < (size_t(8) << 20)) return;
  const uintptr_t lo = ((uintptr_t)p + kHuge - 1) & ~(kHuge - 1), hi = ((uintptr_t)p + bytes) & ~(kHuge - 1);
  if (hi > lo) ::madvise((void*)lo, hi - lo, MADV_HUGEPAGE);  // a hint: its failure changes nothing
#else
  (void)p, (void)bytes;
#endif
}

bool keep_freed_memory() {
#if defined(__GLIBC__)
  // M_MMAP_THRESHOLD at most 32 MiB on 64-bit glibc; setting it also stops glibc's own
  // adjustment of both thresholds.
  return mallopt(M_MMAP_THRESHOLD, 32 << 20) == 1 && mallopt(M_TRIM_THRESHOLD, 256 << 20) == 1;
#else
  return false;
#endif
}

}  // namespace sl
