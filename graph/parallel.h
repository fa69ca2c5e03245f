// One large array worked on in parts on all threads (oneTBB): a 20 M-point tile's decode, bounds
// and index build. The parts are fixed by the size alone, never by the thread count, so whatever
// a part computes (a bucket histogram, a bounding box) combines into the same result on any
// number of threads; an array of one part runs inline, with no task at all.
#pragma once
#include <algorithm>
#include <cstddef>

#include <tbb/parallel_for.h>

namespace sl {

inline constexpr size_t kPartSize = size_t(1) << 20;  // elements: big enough that scheduling costs nothing

inline size_t part_count(size_t n, size_t part = kPartSize) { return std::max<size_t>(1, (n + part - 1) / part); }

// fn(begin, end) for every part [k * part, min(n, (k + 1) * part)), in parallel; fn(0, 0) for n = 0.
template <class F>
void parallel_parts(size_t n, F&& fn, size_t part = kPartSize) {
  const size_t parts = part_count(n, part);
  if (parts == 1) {
    fn(size_t(0), n);
    return;
  }
  tbb::parallel_for(size_t(0), parts, [&](size_t k) { fn(k * part, std::min(n, (k + 1) * part)); });
}

}  // namespace sl
