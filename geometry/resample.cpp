#include "geometry/resample.h"

#include <cstring>
#include <numeric>
#include <string>

#include "graph/error.h"
#include "geometry/rng.h"

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
    thread_local std::vector<uint32_t> perm;  // this runs once per sample: no allocation of n_in each time
    perm.resize(n_in);
    uint32_t* const pm = perm.data();
    std::iota(pm, pm + n_in, 0u);
    for (size_t k = 0; k < P; ++k) {
      const size_t j = k + (size_t)rng.below(n_in - k);
      std::swap(pm[k], pm[j]);
    }
    out.assign(pm, pm + P);
    if (perm.capacity() > (size_t(1) << 20)) std::vector<uint32_t>().swap(perm);  // not kept per thread when huge
    return out;
  }
  out.resize(P);
  std::iota(out.begin(), out.begin() + n_in, 0u);
  for (size_t k = n_in; k < P; ++k) out[k] = (uint32_t)rng.below(n_in);
  return out;
}

namespace {
[[noreturn, gnu::cold, gnu::noinline]] void bad_index(const char* what, size_t value, const char* limit, size_t size) {
  fail("gather_points", std::string(what) + " " + std::to_string(value) + " >= " + limit + " " + std::to_string(size));
}
}  // namespace

Tensor gather_points(const PointCloud& cloud, const std::vector<uint32_t>& crop,
                     const std::vector<uint32_t>& pick) {
  const int ix = cloud.field_index("x"), iy = cloud.field_index("y"), iz = cloud.field_index("z");
  const int ii = cloud.field_index("intensity");
  if (ix < 0 || iy < 0 || iz < 0) fail("gather_points", "point cloud has no x, y or z field");
  const float *const X = cloud.columns[ix].data(), *const Y = cloud.columns[iy].data(),
              *const Z = cloud.columns[iz].data(), *const I = ii >= 0 ? cloud.columns[ii].data() : nullptr;
  const size_t n = cloud.size(), n_in = crop.size(), P = pick.size();
  const uint32_t* const cr = crop.data();
  const uint32_t* const pk = pick.data();
  Tensor t({(int64_t)P, 4});
  float* const o = t.data.data();
  // Row k <- cloud point id (checked against the cloud).
  auto row = [=](uint32_t id, size_t k) {
    if (id >= n) bad_index("point id", id, "cloud size", n);
    float* r = o + 4 * k;
    r[0] = X[id], r[1] = Y[id], r[2] = Z[id], r[3] = I ? I[id] : 0.f;
  };
  if (n_in > 32 * P) {  // a few picks from a large crop: in pick order
    for (size_t k = 0; k < P; ++k) {
      if (pk[k] >= n_in) bad_index("pick", pk[k], "crop size", n_in);
      row(cr[pk[k]], k);
    }
    return t;
  }
  // The cloud is read in ascending crop position (the crop's ids ascend), not in the picks'
  // random order: a bitmap of the picked positions, each remembering its output row; a position
  // picked again (with replacement) copies that row afterwards. The rows come out exactly as
  // in pick order.
  thread_local std::vector<uint64_t> bits_v;
  thread_local std::vector<uint32_t> row_of_v, again_v;
  bits_v.assign((n_in + 63) / 64, 0);
  if (row_of_v.size() < n_in) row_of_v.resize(n_in);
  if (again_v.size() < P) again_v.resize(P);
  uint64_t* const bits = bits_v.data();
  uint32_t* const row_of = row_of_v.data();
  uint32_t* const again = again_v.data();
  size_t n_again = 0;
  for (size_t k = 0; k < P; ++k) {
    const uint32_t p = pk[k];
    if (p >= n_in) bad_index("pick", p, "crop size", n_in);
    const uint64_t w = bits[p >> 6], b = uint64_t(1) << (p & 63);
    if (w & b) {
      again[n_again++] = (uint32_t)k;
    } else {
      bits[p >> 6] = w | b;
      row_of[p] = (uint32_t)k;
    }
  }
  const size_t words = bits_v.size();
  for (size_t wi = 0; wi < words; ++wi)
    for (uint64_t w = bits[wi]; w; w &= w - 1) {
      const size_t p = wi * 64 + (size_t)__builtin_ctzll(w);
      row(cr[p], row_of[p]);
    }
  for (size_t j = 0; j < n_again; ++j) {
    const size_t k = again[j];
    std::memcpy(o + 4 * k, o + 4 * (size_t)row_of[pk[k]], 4 * sizeof(float));
  }
  return t;
}

}  // namespace sl
