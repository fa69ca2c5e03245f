#include "stages/geometry/resample.h"

#include <numeric>

#include "graph/error.h"
#include "stages/geometry/rng.h"

namespace sl {

std::vector<uint32_t> resample_indices(size_t n_in, size_t P, uint64_t seed) {
  std::vector<uint32_t> out;
  if (P == 0) return out;
  if (n_in == 0) fail("resample_indices", "no input points to draw " + std::to_string(P) + " from");
  if (n_in > UINT32_MAX) fail("resample_indices", "more than 2^32-1 input points");
  Rng rng(seed);
  if (n_in >= P) {
    // Partial Fisher-Yates: after step k, perm[0..k] is a uniform random k+1-subset in random
    // order. O(n_in) memory, which is the crop size (thousands), so cheaper than a hash set.
    std::vector<uint32_t> perm(n_in);
    std::iota(perm.begin(), perm.end(), 0u);
    for (size_t k = 0; k < P; ++k) {
      const size_t j = k + (size_t)rng.below(n_in - k);
      std::swap(perm[k], perm[j]);
    }
    perm.resize(P);
    return perm;
  }
  out.resize(P);
  std::iota(out.begin(), out.begin() + n_in, 0u);
  for (size_t k = n_in; k < P; ++k) out[k] = (uint32_t)rng.below(n_in);
  return out;
}

Tensor gather_points(const PointCloud& cloud, const std::vector<uint32_t>& crop,
                     const std::vector<uint32_t>& pick) {
  const int ix = cloud.field_index("x"), iy = cloud.field_index("y"), iz = cloud.field_index("z");
  const int ii = cloud.field_index("intensity");
  if (ix < 0 || iy < 0 || iz < 0) fail("gather_points", "point cloud has no x, y or z field");
  const float* cols[3] = {cloud.columns[ix].data(), cloud.columns[iy].data(), cloud.columns[iz].data()};
  const float* inten = ii >= 0 ? cloud.columns[ii].data() : nullptr;
  const size_t n = cloud.size();
  Tensor t({(int64_t)pick.size(), 4});
  float* o = t.data.data();
  for (size_t k = 0; k < pick.size(); ++k, o += 4) {
    if (pick[k] >= crop.size())
      fail("gather_points", "pick " + std::to_string(pick[k]) + " >= crop size " + std::to_string(crop.size()));
    const uint32_t id = crop[pick[k]];
    if (id >= n) fail("gather_points", "point id " + std::to_string(id) + " >= cloud size " + std::to_string(n));
    o[0] = cols[0][id], o[1] = cols[1][id], o[2] = cols[2][id];
    o[3] = inten ? inten[id] : 0.f;
  }
  return t;
}

}  // namespace sl
