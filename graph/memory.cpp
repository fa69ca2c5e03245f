#include "graph/memory.h"

#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace sl {
namespace {
std::string g_tuning;
}

std::string tune_allocator() {
#if defined(__GLIBC__)
  const char* t = std::getenv("GLIBC_TUNABLES");
  if (t && std::strstr(t, "glibc.malloc.")) return g_tuning = "glibc malloc as set by GLIBC_TUNABLES";
  constexpr int kMmapThreshold = 64 << 20, kTrimThreshold = 256 << 20;
  const bool ok = mallopt(M_MMAP_THRESHOLD, kMmapThreshold) == 1 && mallopt(M_TRIM_THRESHOLD, kTrimThreshold) == 1;
  return g_tuning = ok ? "glibc malloc: blocks up to 64 MiB from the heaps, freed memory up to 256 MiB kept for reuse"
                       : "glibc malloc: defaults (mallopt refused the settings)";
#else
  return g_tuning = "not glibc: the C library's defaults";
#endif
}

const std::string& allocator_tuning() { return g_tuning; }

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
