// Choosing a fixed number P of the cropped points, and gathering them into the network's
// context tensor.
#pragma once
#include <cstdint>
#include <vector>

#include "graph/message.h"

namespace sl {

// P positions in [0, n_in), deterministic for a seed on every platform (own RNG).
// n_in >= P: a uniform random subset without replacement (partial Fisher-Yates), in the
//            random order the shuffle produced.
// n_in <  P: every position once (0..n_in-1, in order), then P - n_in uniform random extras
//            with replacement, so no cropped point is lost.
// Throws sl::Error when n_in == 0 and P > 0 (nothing to draw from: the stage's error policy
// decides whether the sample is skipped).
std::vector<uint32_t> resample_indices(size_t n_in, size_t P, uint64_t seed);

// [P, 4] float32 rows (x, y, z, intensity) of cloud points crop[pick[k]]. A cloud without an
// intensity field gives intensity 0. Throws sl::Error when x, y or z is missing or an index is
// out of range.
Tensor gather_points(const PointCloud& cloud, const std::vector<uint32_t>& crop,
                     const std::vector<uint32_t>& pick);

}  // namespace sl
