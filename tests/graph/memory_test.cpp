#include "graph/memory.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

// keep_freed_memory: a block of a scene's size (a few MiB) then comes from the heap, not from a
// mapping of its own (which glibc would unmap on free, for the kernel to fault in and clear again).
TEST(Memory, KeepFreedMemoryServesSceneSizedBlocksFromTheHeap) {
#if defined(__GLIBC__)
  if (!sl::keep_freed_memory()) GTEST_SKIP() << "mallopt refused (another allocator, e.g. a sanitizer's)";
  const size_t mapped_before = mallinfo2().hblkhd;
  for (int i = 0; i < 3; ++i) {
    void* p = std::malloc(size_t(3) << 20);
    ASSERT_NE(p, nullptr);
    std::memset(p, i, size_t(3) << 20);
    EXPECT_EQ(mallinfo2().hblkhd, mapped_before) << "a 3 MiB block was mapped on its own";
    std::free(p);
  }
#else
  GTEST_SKIP() << "glibc only";
#endif
}
