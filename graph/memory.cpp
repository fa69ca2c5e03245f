#include "graph/memory.h"

#include <sys/mman.h>

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

}  // namespace sl
