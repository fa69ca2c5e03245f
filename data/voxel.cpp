#include "data/voxel.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <map>

#include "graph/error.h"

namespace sl {
namespace {

void check_input(const PointCloud& in, double voxel, const char* who) {
  if (!(voxel > 0) || !std::isfinite(voxel)) fail(who, "the voxel side must be a positive number of metres");
  if (in.fields.size() < 4 || in.fields[0] != "x" || in.fields[1] != "y" || in.fields[2] != "z" || in.fields[3] != "intensity")
    fail(who, "expects the columns x, y, z, intensity first");
}

// One voxel's running sums, in input order.
struct Sums {
  double x = 0, y = 0, z = 0, i = 0;
  int64_t n = 0;
  void add(const PointCloud& c, size_t p) {
    x += c.columns[0][p], y += c.columns[1][p], z += c.columns[2][p], i += c.columns[3][p];
    ++n;
  }
  void emit(PointCloud& out) const {
    const double k = double(n);
    out.columns[0].push_back(float(x / k)), out.columns[1].push_back(float(y / k));
    out.columns[2].push_back(float(z / k)), out.columns[3].push_back(float(i / k));
  }
};

PointCloud empty_like(const PointCloud& in) {
  PointCloud out;
  out.fields = {"x", "y", "z", "intensity"};
  out.columns.assign(4, {});
  out.origin = in.origin;
  return out;
}

bool finite_point(const PointCloud& c, size_t p) {
  return std::isfinite(c.columns[0][p]) && std::isfinite(c.columns[1][p]) && std::isfinite(c.columns[2][p]);
}

// The voxel coordinate on one axis; both versions use exactly this.
double cell(float coordinate, double voxel) { return std::floor(double(coordinate) / voxel); }

}  // namespace

PointCloud voxel_downsample_reference(const PointCloud& in, double voxel) {
  check_input(in, voxel, "voxel_downsample");
  std::map<std::array<double, 3>, Sums> voxels;
  for (size_t p = 0; p < in.size(); ++p)
    if (finite_point(in, p))
      voxels[{cell(in.columns[0][p], voxel), cell(in.columns[1][p], voxel), cell(in.columns[2][p], voxel)}].add(in, p);
  PointCloud out = empty_like(in);
  for (const auto& [key, s] : voxels) s.emit(out);
  return out;
}

PointCloud voxel_downsample(const PointCloud& in, double voxel) {
  check_input(in, voxel, "voxel_downsample");
  if (in.size() > UINT32_MAX) fail("voxel_downsample", "more than 2^32 points");
  std::vector<uint32_t> kept;  // finite points, in input order
  kept.reserve(in.size());
  double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
  for (size_t p = 0; p < in.size(); ++p) {
    if (!finite_point(in, p)) continue;
    kept.push_back(uint32_t(p));
    for (int a = 0; a < 3; ++a) {
      const double k = cell(in.columns[a][p], voxel);
      lo[a] = std::min(lo[a], k), hi[a] = std::max(hi[a], k);
    }
  }
  PointCloud out = empty_like(in);
  if (kept.empty()) return out;
  // Fast path: the three cell offsets and the point's rank packed in one 64-bit word (x highest,
  // the rank lowest), sorted by an LSD radix sort on the offsets only. LSD is stable and the ranks
  // start ascending, so each voxel's points keep input order and its sums are the reference's.
  int bits[3] = {0, 0, 0};
  bool packable = true;
  for (int a = 0; a < 3; ++a) {
    const double span = hi[a] - lo[a];
    if (!(span < 4294967296.0)) packable = false;
    else bits[a] = std::bit_width(uint64_t(span));
  }
  const int rank_bits = std::bit_width(uint64_t(kept.size() - 1));
  const int key_bits = bits[0] + bits[1] + bits[2];
  if (!packable || rank_bits + key_bits > 64) {
    // Cells too far apart to pack: a comparison sort on (cell, rank), the same order.
    struct Item { double k[3]; uint32_t rank; };
    std::vector<Item> items(kept.size());
    for (size_t r = 0; r < kept.size(); ++r) {
      for (int a = 0; a < 3; ++a) items[r].k[a] = cell(in.columns[a][kept[r]], voxel);
      items[r].rank = uint32_t(r);
    }
    std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
      if (a.k[0] != b.k[0]) return a.k[0] < b.k[0];
      if (a.k[1] != b.k[1]) return a.k[1] < b.k[1];
      if (a.k[2] != b.k[2]) return a.k[2] < b.k[2];
      return a.rank < b.rank;
    });
    for (size_t r = 0; r < items.size();) {
      Sums s;
      size_t e = r;
      for (; e < items.size() && std::equal(items[e].k, items[e].k + 3, items[r].k); ++e) s.add(in, kept[items[e].rank]);
      s.emit(out);
      r = e;
    }
    return out;
  }
  std::vector<uint64_t> keys(kept.size()), tmp(kept.size());
  for (size_t r = 0; r < kept.size(); ++r) {
    const uint32_t p = kept[r];
    uint64_t k = 0;
    for (int a = 0; a < 3; ++a) k = (k << bits[a]) | uint64_t(cell(in.columns[a][p], voxel) - lo[a]);
    keys[r] = (k << rank_bits) | uint64_t(r);
  }
  for (int shift = rank_bits; shift < rank_bits + key_bits; shift += 8) {
    size_t count[257] = {};
    for (uint64_t k : keys) ++count[((k >> shift) & 0xff) + 1];
    for (int d = 0; d < 256; ++d) count[d + 1] += count[d];
    for (uint64_t k : keys) tmp[count[(k >> shift) & 0xff]++] = k;
    keys.swap(tmp);
  }
  const uint64_t rank_mask = (uint64_t(1) << rank_bits) - 1;
  for (size_t r = 0; r < keys.size();) {
    const uint64_t voxel_key = keys[r] >> rank_bits;
    Sums s;
    size_t e = r;
    for (; e < keys.size() && (keys[e] >> rank_bits) == voxel_key; ++e) s.add(in, kept[keys[e] & rank_mask]);
    s.emit(out);
    r = e;
  }
  return out;
}

}  // namespace sl
