#include "stages/geometry/crop.h"

#include <algorithm>
#include <cmath>

#include "graph/error.h"

namespace sl {
namespace {

// One segment of the polyline, with what the distance test needs precomputed.
struct Seg {
  float ax, ay, az, dx, dy, dz;  // start and direction (end - start)
  float inv_len2;                // 1 / |d_xy|^2, or 0 for a zero-length (xy) segment
};

std::vector<Seg> make_segments(const Polyline& line) {
  std::vector<Seg> segs;
  const auto& p = line.points;
  if (p.empty()) return segs;
  // A one-point line is a zero-length segment, so that it still crops a disc.
  const size_t n = std::max<size_t>(p.size() - 1, 1);
  segs.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const auto& a = p[i];
    const auto& b = p[std::min(i + 1, p.size() - 1)];
    Seg s{a[0], a[1], a[2], b[0] - a[0], b[1] - a[1], b[2] - a[2], 0.f};
    const float l2 = s.dx * s.dx + s.dy * s.dy;
    s.inv_len2 = l2 > 0 ? 1.f / l2 : 0.f;
    segs.push_back(s);
  }
  return segs;
}

// Squared xy distance from (x, y) to the segment, and the z of the closest point. Shared by
// the indexed crop and the reference so both make exactly the same float decisions.
inline float dist2_to(const Seg& s, float x, float y, float* z_at) {
  const float px = x - s.ax, py = y - s.ay;
  float t = (px * s.dx + py * s.dy) * s.inv_len2;
  t = std::clamp(t, 0.f, 1.f);
  const float ex = px - t * s.dx, ey = py - t * s.dy;
  *z_at = s.az + t * s.dz;
  return ex * ex + ey * ey;
}

struct Columns {
  const float *x, *y, *z;
};
Columns xyz_of(const PointCloud& cloud, const char* who) {
  const int ix = cloud.field_index("x"), iy = cloud.field_index("y"), iz = cloud.field_index("z");
  if (ix < 0 || iy < 0 || iz < 0) fail(who, "point cloud has no x, y or z field");
  return {cloud.columns[ix].data(), cloud.columns[iy].data(), cloud.columns[iz].data()};
}

// Decides one point against the candidate segments [first, last): returns true when it is
// kept. Without a z band the first segment within the radius decides; with one, the nearest
// segment (lowest index on ties) gives the reference z.
template <typename SegIt>
inline bool keep_point(float x, float y, float z, SegIt first, SegIt last, float r2, bool z_band,
                       float z_min, float z_max) {
  if (!z_band) {
    float za;
    for (auto it = first; it != last; ++it)
      if (dist2_to(*it, x, y, &za) <= r2) return true;
    return false;
  }
  float best = std::numeric_limits<float>::infinity(), best_z = 0;
  for (auto it = first; it != last; ++it) {
    float za;
    const float d2 = dist2_to(*it, x, y, &za);
    if (d2 < best) best = d2, best_z = za;
  }
  if (!(best <= r2)) return false;
  const float dz = z - best_z;
  return dz >= z_min && dz <= z_max;
}

// Ascending order for ids that are distinct (every point sits in one cell, visited once). When
// the id span is small next to the count (a crop of thousands out of a ~100k-point scene), a
// bitmap over the span and one scan of its words is several times cheaper than a comparison
// sort, which was ~16% of a preprocess run's time.
void sort_unique_ids(std::vector<uint32_t>* ids) {
  auto& v = *ids;
  if (v.size() < 64) {
    std::sort(v.begin(), v.end());
    return;
  }
  const auto [lo_it, hi_it] = std::minmax_element(v.begin(), v.end());
  const uint32_t lo = *lo_it;
  const size_t words = ((size_t)(*hi_it - lo) >> 6) + 1;
  if (words > 8 * v.size()) {
    std::sort(v.begin(), v.end());
    return;
  }
  std::vector<uint64_t> bits(words, 0);
  for (uint32_t id : v) bits[(id - lo) >> 6] |= uint64_t(1) << ((id - lo) & 63);
  size_t n = 0;
  for (size_t w = 0; w < words; ++w)
    for (uint64_t b = bits[w]; b; b &= b - 1) v[n++] = lo + (uint32_t)(w * 64 + (size_t)__builtin_ctzll(b));
  v.resize(n);
}

}  // namespace

// floor + clamp to [0, n-1] without std::floor (a library call without SSE4.1): below 0 (or
// NaN) is cell 0, and for f >= 0 truncation is floor.
static inline int clamp_cell(float f, int n) {
  if (!(f > 0.f)) return 0;
  if (f >= (float)(n - 1)) return n - 1;
  return (int)f;
}
int GridIndex::cell_x(float x) const { return clamp_cell((x - x0_) * inv_cell_, nx_); }
int GridIndex::cell_y(float y) const { return clamp_cell((y - y0_) * inv_cell_, ny_); }

std::shared_ptr<const GridIndex> GridIndex::build(const PointCloud& cloud, float cell_size) {
  if (!(cell_size > 0) || !std::isfinite(cell_size))
    fail("GridIndex::build", "cell size must be a positive number");
  const Columns c = xyz_of(cloud, "GridIndex::build");
  const size_t n = cloud.size();
  if (n > UINT32_MAX) fail("GridIndex::build", "more than 2^32-1 points");
  auto g = std::make_shared<GridIndex>();
  g->cloud_size_ = n;
  float xmin = INFINITY, ymin = INFINITY, xmax = -INFINITY, ymax = -INFINITY;
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(c.x[i]) || !std::isfinite(c.y[i]) || !std::isfinite(c.z[i])) continue;
    xmin = std::min(xmin, c.x[i]), xmax = std::max(xmax, c.x[i]);
    ymin = std::min(ymin, c.y[i]), ymax = std::max(ymax, c.y[i]);
  }
  if (!(xmin <= xmax)) xmin = xmax = ymin = ymax = 0;  // no finite point: a 1x1 empty grid
  float cell = cell_size;
  auto dims = [&](float cs, int64_t* nx, int64_t* ny) {
    *nx = (int64_t)std::floor((xmax - xmin) / cs) + 1;
    *ny = (int64_t)std::floor((ymax - ymin) / cs) + 1;
  };
  int64_t nx, ny;
  dims(cell, &nx, &ny);
  while (nx * ny > kMaxCells) cell *= 2, dims(cell, &nx, &ny);
  g->cell_ = cell, g->inv_cell_ = 1.f / cell, g->x0_ = xmin, g->y0_ = ymin, g->nx_ = (int)nx, g->ny_ = (int)ny;

  // Counting sort by cell: ids stay ascending within a cell because we scan them in order.
  std::vector<uint32_t> cell_of(n, UINT32_MAX);
  g->start_.assign((size_t)(nx * ny) + 1, 0);
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(c.x[i]) || !std::isfinite(c.y[i]) || !std::isfinite(c.z[i])) continue;
    const uint32_t cid = (uint32_t)g->cell_y(c.y[i]) * (uint32_t)nx + (uint32_t)g->cell_x(c.x[i]);
    cell_of[i] = cid;
    ++g->start_[cid + 1];
  }
  for (size_t k = 1; k < g->start_.size(); ++k) g->start_[k] += g->start_[k - 1];
  const size_t m = g->start_.back();
  g->ids_.resize(m), g->xs_.resize(m), g->ys_.resize(m), g->zs_.resize(m);
  // Scatter with start_[c] as the write cursor (it ends at the old start_[c+1]), then shift
  // back by one: no second cursor array over all cells.
  uint32_t* cursor = g->start_.data();
  for (size_t i = 0; i < n; ++i) {
    if (cell_of[i] == UINT32_MAX) continue;
    const uint32_t at = cursor[cell_of[i]]++;
    g->ids_[at] = (uint32_t)i, g->xs_[at] = c.x[i], g->ys_[at] = c.y[i], g->zs_[at] = c.z[i];
  }
  for (size_t k = g->start_.size() - 1; k > 0; --k) g->start_[k] = g->start_[k - 1];
  g->start_[0] = 0;
  return g;
}

std::vector<uint32_t> crop_polyline(const PointCloud& cloud, const GridIndex& g,
                                    const Polyline& line, float radius, float z_min, float z_max) {
  if (g.cloud_size_ != cloud.size())
    fail("crop_polyline", "the index was built for a cloud of " + std::to_string(g.cloud_size_) +
                              " points, this one has " + std::to_string(cloud.size()));
  std::vector<uint32_t> out;
  if (!(radius >= 0) || line.points.empty() || g.ids_.empty()) return out;
  const std::vector<Seg> segs = make_segments(line);
  const float r2 = radius * radius;
  const bool z_band = z_min > -INFINITY || z_max < INFINITY;

  // (cell, segment) pairs: every cell that a segment's radius-neighbourhood may touch. A cell
  // is kept only if its centre lies within radius + half its diagonal of the segment, which
  // trims the bounding-box cells a long diagonal segment would otherwise drag in.
  const float half_diag = 0.7071068f * g.cell_;
  // Slack covers float rounding of the cell assignment at cell borders.
  const float reach = (radius + half_diag) * 1.0001f + 1e-6f;
  const float reach2 = reach * reach;
  // Calls f(k, cx, cy) for every (segment, cell) pair, segments in ascending order.
  int bx_lo = INT32_MAX, bx_hi = INT32_MIN, by_lo = INT32_MAX, by_hi = INT32_MIN;
  auto for_each_pair = [&](auto&& f) {
    for (size_t k = 0; k < segs.size(); ++k) {
      const Seg& s = segs[k];
      const float bx0 = std::min(s.ax, s.ax + s.dx) - radius, bx1 = std::max(s.ax, s.ax + s.dx) + radius;
      const float by0 = std::min(s.ay, s.ay + s.dy) - radius, by1 = std::max(s.ay, s.ay + s.dy) + radius;
      // Entirely outside the grid: nothing to find (clamping would wrongly pull in border cells
      // only as candidates, harmless, but skipping is cheaper).
      if (bx1 < g.x0_ || by1 < g.y0_ || bx0 > g.x0_ + g.nx_ * g.cell_ || by0 > g.y0_ + g.ny_ * g.cell_)
        continue;
      const int cx0 = g.cell_x(bx0), cx1 = g.cell_x(bx1), cy0 = g.cell_y(by0), cy1 = g.cell_y(by1);
      for (int cy = cy0; cy <= cy1; ++cy)
        for (int cx = cx0; cx <= cx1; ++cx) {
          const float mx = g.x0_ + (cx + 0.5f) * g.cell_, my = g.y0_ + (cy + 0.5f) * g.cell_;
          float za;
          if (dist2_to(s, mx, my, &za) > reach2) continue;
          f(k, cx, cy);
        }
    }
  };
  std::vector<Seg> cell_segs;
  const float inner2 = r2 * (1.f - 1e-4f) - 1e-6f;
  // One cell with its candidate segments (ascending index, which keeps the tie rule of the
  // reference).
  auto visit = [&](int cx, int cy) {
    const uint64_t cid = (uint64_t)cy * (uint64_t)g.nx_ + (uint64_t)cx;
    // A cell whose four corners all lie within the radius of one segment lies wholly within it
    // (the distance to a segment is convex): its points are kept without a test. The margin
    // covers float rounding of the corners and of points assigned to the cell at its borders.
    if (!z_band) {
      const float x0 = g.x0_ + cx * g.cell_, y0 = g.y0_ + cy * g.cell_, x1 = x0 + g.cell_, y1 = y0 + g.cell_;
      for (const Seg& sg : cell_segs) {
        float za;
        if (dist2_to(sg, x0, y0, &za) <= inner2 && dist2_to(sg, x1, y0, &za) <= inner2 &&
            dist2_to(sg, x0, y1, &za) <= inner2 && dist2_to(sg, x1, y1, &za) <= inner2) {
          out.insert(out.end(), g.ids_.begin() + g.start_[cid], g.ids_.begin() + g.start_[cid + 1]);
          return;
        }
      }
    }
    for (uint32_t j = g.start_[cid]; j < g.start_[cid + 1]; ++j)
      if (keep_point(g.xs_[j], g.ys_[j], g.zs_[j], cell_segs.begin(), cell_segs.end(), r2, z_band, z_min, z_max))
        out.push_back(g.ids_[j]);
  };
  // One pass of the reach tests: the pairs and the box of cells they touch.
  struct Pair {
    int cx, cy;
    uint32_t k;
  };
  std::vector<Pair> found;
  for_each_pair([&](size_t k, int cx, int cy) {
    found.push_back({cx, cy, (uint32_t)k});
    bx_lo = std::min(bx_lo, cx), bx_hi = std::max(bx_hi, cx), by_lo = std::min(by_lo, cy), by_hi = std::max(by_hi, cy);
  });
  if (found.empty()) return out;
  const size_t W = (size_t)(bx_hi - bx_lo + 1), H = (size_t)(by_hi - by_lo + 1);
  if (W * H <= (size_t(1) << 20)) {
    // Bucket the pairs by cell over the line's bounding box (a counting sort, stable): each
    // cell's segments come out in ascending order, and cells in row-major order.
    std::vector<uint32_t> start(W * H + 1, 0);
    for (const Pair& q : found) ++start[(size_t)(q.cy - by_lo) * W + (size_t)(q.cx - bx_lo) + 1];
    for (size_t i = 1; i < start.size(); ++i) start[i] += start[i - 1];
    std::vector<uint32_t> seg_of(found.size());
    std::vector<uint32_t> fill(start.begin(), start.end() - 1);
    for (const Pair& q : found) seg_of[fill[(size_t)(q.cy - by_lo) * W + (size_t)(q.cx - bx_lo)]++] = q.k;
    for (size_t c = 0; c < W * H; ++c) {
      if (start[c] == start[c + 1]) continue;
      cell_segs.clear();
      for (uint32_t q = start[c]; q < start[c + 1]; ++q) cell_segs.push_back(segs[seg_of[q]]);
      visit(bx_lo + (int)(c % W), by_lo + (int)(c / W));
    }
  } else {
    // A line spanning a huge grid: sort (cell, segment) pairs instead of a dense box of buckets.
    std::vector<uint64_t> pairs;
    for (const Pair& q : found) pairs.push_back(((uint64_t)q.cy * (uint64_t)g.nx_ + (uint64_t)q.cx) << 32 | (uint64_t)q.k);
    std::sort(pairs.begin(), pairs.end());
    for (size_t a = 0; a < pairs.size();) {
      const uint64_t cid = pairs[a] >> 32;
      size_t b = a;
      cell_segs.clear();
      while (b < pairs.size() && (pairs[b] >> 32) == cid) cell_segs.push_back(segs[pairs[b] & 0xffffffffu]), ++b;
      a = b;
      visit((int)(cid % (uint64_t)g.nx_), (int)(cid / (uint64_t)g.nx_));
    }
  }
  sort_unique_ids(&out);
  return out;
}

std::vector<uint32_t> crop_polyline_reference(const PointCloud& cloud, const Polyline& line,
                                              float radius, float z_min, float z_max) {
  const Columns c = xyz_of(cloud, "crop_polyline_reference");
  std::vector<uint32_t> out;
  if (!(radius >= 0) || line.points.empty()) return out;
  const std::vector<Seg> segs = make_segments(line);
  const bool z_band = z_min > -INFINITY || z_max < INFINITY;
  for (size_t i = 0; i < cloud.size(); ++i) {
    if (!std::isfinite(c.x[i]) || !std::isfinite(c.y[i]) || !std::isfinite(c.z[i])) continue;
    if (keep_point(c.x[i], c.y[i], c.z[i], segs.begin(), segs.end(), radius * radius, z_band,
                   z_min, z_max))
      out.push_back((uint32_t)i);
  }
  return out;
}

}  // namespace sl
