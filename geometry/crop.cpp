#include "geometry/crop.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include "graph/error.h"
#include "graph/memory.h"
#include "graph/parallel.h"
#include "geometry/crop_kernel.h"

namespace sl {

using crop_detail::CellTest;
using crop_detail::dist2_to;
using crop_detail::KeepCellFn;
using crop_detail::kPad;
static_assert(GridIndex::crop_pad == kPad, "the index pads its ids for the kernels");
using crop_detail::Seg;

namespace crop_detail {
uint32_t keep_cell_scalar(const float* xs, const float* ys, const float* zs, const uint32_t* ids, uint32_t a,
                          uint32_t b, const CellTest& t, uint32_t* out);
#if defined(__x86_64__)
namespace {
struct Sse2 {
  static constexpr uint32_t W = 4;
  using F = __m128;
  static F set1(float v) { return _mm_set1_ps(v); }
  static F gather(const float* base, const uint32_t* ids) {
    return _mm_set_ps(base[ids[3]], base[ids[2]], base[ids[1]], base[ids[0]]);
  }
  static F add(F a, F b) { return _mm_add_ps(a, b); }
  static F sub(F a, F b) { return _mm_sub_ps(a, b); }
  static F mul(F a, F b) { return _mm_mul_ps(a, b); }
  static F lt(F a, F b) { return _mm_cmplt_ps(a, b); }
  static F le(F a, F b) { return _mm_cmple_ps(a, b); }
  static F and_(F a, F b) { return _mm_and_ps(a, b); }
  static F select(F m, F a, F b) { return _mm_or_ps(_mm_and_ps(m, a), _mm_andnot_ps(m, b)); }
  static unsigned mask_bits(F m) { return (unsigned)_mm_movemask_ps(m); }
};
}  // namespace
uint32_t keep_cell_sse2(const float* xs, const float* ys, const float* zs, const uint32_t* ids, uint32_t a,
                        uint32_t b, const CellTest& t, uint32_t* out) {
  return keep_cell_simd<Sse2>(xs, ys, zs, ids, a, b, t, out);
}
#endif
}  // namespace crop_detail

namespace {

// The kernels this build has, best first, with whether this CPU can run them.
struct Kernel {
  const char* name;
  KeepCellFn fn;
  bool runs;
};
std::vector<Kernel> all_kernels() {
  std::vector<Kernel> k;
#if defined(__x86_64__)
#if defined(SL_CROP_AVX2)
  k.push_back({"avx2", crop_detail::keep_cell_avx2, (bool)__builtin_cpu_supports("avx2")});
#endif
  k.push_back({"sse2", crop_detail::keep_cell_sse2, true});
#endif
  k.push_back({"scalar", crop_detail::keep_cell_scalar, true});
  return k;
}
const Kernel* best_kernel() {
  static const std::vector<Kernel> kernels = all_kernels();
  for (const Kernel& k : kernels)
    if (k.runs) return &k;
  return &kernels.back();
}
std::atomic<const Kernel*> g_kernel{nullptr};
const Kernel& kernel() {
  const Kernel* k = g_kernel.load(std::memory_order_relaxed);
  return k ? *k : *best_kernel();
}

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

}  // namespace

// The plain kernel (any CPU): keep_point per point.
uint32_t crop_detail::keep_cell_scalar(const float* xs, const float* ys, const float* zs, const uint32_t* ids,
                                       uint32_t a, uint32_t b, const CellTest& t, uint32_t* out) {
  uint32_t n = 0;
  for (uint32_t j = a; j < b; ++j) {
    const uint32_t id = ids[j];
    if (keep_point(xs[id], ys[id], t.z_band ? zs[id] : 0.f, t.segs, t.segs + t.nsegs, t.r2, t.z_band, t.z_min, t.z_max))
      out[n++] = id;
  }
  return n;
}

namespace {

}  // namespace

// The bounding box of the points whose x, y and z are all finite (+-inf when there is none).
// Four lanes at a time on x86-64 (min and max are exact: the same result as one at a time).
static void finite_bbox(const float* x, const float* y, const float* z, size_t n, float* xmin, float* xmax,
                        float* ymin, float* ymax) {
  float lo_x = INFINITY, hi_x = -INFINITY, lo_y = INFINITY, hi_y = -INFINITY;
  size_t i = 0;
#if defined(__x86_64__)
  const __m128 inf = _mm_set1_ps(INFINITY), ninf = _mm_set1_ps(-INFINITY), zero = _mm_setzero_ps();
  __m128 vlx = inf, vhx = ninf, vly = inf, vhy = ninf;
  for (; i + 4 <= n; i += 4) {
    const __m128 X = _mm_loadu_ps(x + i), Y = _mm_loadu_ps(y + i), Z = _mm_loadu_ps(z + i);
    // (X - X) + (Y - Y) + (Z - Z) is 0 exactly when all three are finite.
    const __m128 ok = _mm_cmpeq_ps(_mm_add_ps(_mm_add_ps(_mm_sub_ps(X, X), _mm_sub_ps(Y, Y)), _mm_sub_ps(Z, Z)), zero);
    vlx = _mm_min_ps(vlx, _mm_or_ps(_mm_and_ps(ok, X), _mm_andnot_ps(ok, inf)));
    vhx = _mm_max_ps(vhx, _mm_or_ps(_mm_and_ps(ok, X), _mm_andnot_ps(ok, ninf)));
    vly = _mm_min_ps(vly, _mm_or_ps(_mm_and_ps(ok, Y), _mm_andnot_ps(ok, inf)));
    vhy = _mm_max_ps(vhy, _mm_or_ps(_mm_and_ps(ok, Y), _mm_andnot_ps(ok, ninf)));
  }
  alignas(16) float l[4][4];
  _mm_store_ps(l[0], vlx), _mm_store_ps(l[1], vhx), _mm_store_ps(l[2], vly), _mm_store_ps(l[3], vhy);
  for (int k = 0; k < 4; ++k)
    lo_x = std::min(lo_x, l[0][k]), hi_x = std::max(hi_x, l[1][k]), lo_y = std::min(lo_y, l[2][k]),
    hi_y = std::max(hi_y, l[3][k]);
#endif
  for (; i < n; ++i) {
    if (!std::isfinite(x[i]) || !std::isfinite(y[i]) || !std::isfinite(z[i])) continue;
    lo_x = std::min(lo_x, x[i]), hi_x = std::max(hi_x, x[i]);
    lo_y = std::min(lo_y, y[i]), hi_y = std::max(hi_y, y[i]);
  }
  *xmin = lo_x, *xmax = hi_x, *ymin = lo_y, *ymax = hi_y;
}

// floor + clamp to [0, n-1] without std::floor (a library call without SSE4.1): below 0 (or
// NaN) is cell 0, and for f >= 0 truncation is floor.
static inline int clamp_cell(float f, int n) {
  if (!(f > 0.f)) return 0;
  if (f >= (float)(n - 1)) return n - 1;
  return (int)f;
}
int GridIndex::cell_x(float x) const { return clamp_cell((x - x0_) * inv_cell_, nx_); }
int GridIndex::cell_y(float y) const { return clamp_cell((y - y0_) * inv_cell_, ny_); }
template <typename T>
void GridIndex::Array<T>::allocate(size_t count) {
  p.reset(new T[count]), n = count;
  advise_huge_pages(p.get(), count * sizeof(T));
}
template struct GridIndex::Array<uint32_t>;
template struct GridIndex::Array<float>;

size_t GridIndex::bytes() const {
  return sizeof(*this) + (start_.capacity() + ids_.size()) * sizeof(uint32_t);
}

std::shared_ptr<const GridIndex> GridIndex::build(const PointCloud& cloud, float cell_size) {
  return build(cloud, cell_size, -1);
}

std::shared_ptr<const GridIndex> GridIndex::build(const PointCloud& cloud, float cell_size, int tile_shift) {
  if (!(cell_size > 0) || !std::isfinite(cell_size))
    fail("GridIndex::build", "cell size must be a positive number");
  const Columns c = xyz_of(cloud, "GridIndex::build");
  const size_t n = cloud.size();
  if (n > UINT32_MAX) fail("GridIndex::build", "more than 2^32-1 points");
  auto g = std::make_shared<GridIndex>();
  g->cloud_size_ = n;
  float xmin = INFINITY, xmax = -INFINITY, ymin = INFINITY, ymax = -INFINITY;
  {
    // Per block, then combined: min and max are exact, so any split gives the same box.
    std::vector<std::array<float, 4>> box(part_count(n));
    parallel_parts(n, [&](size_t a, size_t b) {
      auto& k = box[a / kPartSize];
      finite_bbox(c.x + a, c.y + a, c.z + a, b - a, &k[0], &k[1], &k[2], &k[3]);
    });
    for (const auto& b : box)
      xmin = std::min(xmin, b[0]), xmax = std::max(xmax, b[1]), ymin = std::min(ymin, b[2]), ymax = std::max(ymax, b[3]);
  }
  if (!(xmin <= xmax)) xmin = xmax = ymin = ymax = 0;  // no finite point: a 1x1 empty grid
  // The grid's size in double: an extent near the float range (or a huge one over a tiny cell)
  // must neither overflow nor loop; the cell doubles until the grid has at most kMaxCells.
  const double ex = (double)xmax - (double)xmin, ey = (double)ymax - (double)ymin;
  double cs = cell_size;
  auto cells_of = [&](double c) { return (std::floor(ex / c) + 1) * (std::floor(ey / c) + 1); };
  while (cells_of(cs) > (double)kMaxCells) cs *= 2;
  const float cell = (float)cs;
  if (!(cell > 0) || !std::isfinite(cell)) fail("GridIndex::build", "the points' extent is too large for a grid");
  const int64_t nx = (int64_t)std::floor(ex / cs) + 1, ny = (int64_t)std::floor(ey / cs) + 1;
  g->cell_ = cell, g->inv_cell_ = 1.f / cell, g->x0_ = xmin, g->y0_ = ymin, g->nx_ = (int)nx, g->ny_ = (int)ny;

  // A counting sort by cell: ids stay ascending within a cell because the points are scanned in
  // order (and every pass below is stable). The cell of a point is computed again in each pass
  // rather than stored: nothing per point beside the index. Raw pointers in the loops: through
  // the vectors the compiler reloaded their data pointers after every store.
  //
  // One level (row-major cells) while the cell counters fit in the cache (up to 64k cells);
  // beyond, the points are first sorted by tiles of 32 x 32 cells (about as many tiles as a
  // small grid has cells) and then each tile by cell in cache: a direct scatter into a million
  // cells misses the cache on every point. Measured (bench/results/preprocess.md): a 97k-point
  // scan (23k cells) is fastest in one level, the 20 M-point tile (1M cells) in two.
  if (tile_shift < -1 || tile_shift > 8) fail("GridIndex::build", "tile_shift must be -1 (automatic) or 0..8");
  int sh = tile_shift;
  if (sh < 0) sh = nx * ny <= (int64_t(1) << 16) ? 0 : 5;
  auto n_tiles_of = [&](int s) { return ((nx + (1 << s) - 1) >> s) * ((ny + (1 << s) - 1) >> s); };
  if (sh > 0 && (n_tiles_of(sh) << (2 * sh)) > 2 * nx * ny + 4096) sh = 0;  // a thin grid: padding would dominate
  g->tile_shift_ = sh, g->tiles_x_ = (int)((nx + (1 << sh) - 1) >> sh);
  const size_t n_tiles = (size_t)n_tiles_of(sh), per_tile = size_t(1) << (2 * sh);
  g->start_.assign(n_tiles * per_tile + 1, 0);

  const float x0 = xmin, y0 = ymin, inv = g->inv_cell_;
  const int nxi = (int)nx, nyi = (int)ny;
  const float *const px = c.x, *const py = c.y, *const pz = c.z;
  // x - x + (y - y) + (z - z) is 0 for finite values and NaN otherwise: one test for all three.
  auto finite3 = [](float x, float y, float z) { return x - x + (y - y) + (z - z) == 0.f; };
  const GridIndex& gi = *g;
  auto slot_of = [&gi, x0, y0, inv, nxi, nyi](float x, float y) {
    return gi.slot(clamp_cell((x - x0) * inv, nxi), clamp_cell((y - y0) * inv, nyi));
  };
  // Level 1: counts per tile (per cell when sh is 0), then the points in tile order. The
  // bucket (tile, or cell) of each point is computed for a chunk of points at a time, the same
  // way in both passes; four points at a time on x86-64 (a bucket id such as cy * nx + cx is
  // exact in float arithmetic below 2^24, and min / max / truncation make clamp_cell's
  // decisions).
  constexpr size_t kChunk = 256;
  constexpr uint32_t kSkip = UINT32_MAX;  // a point with a non-finite coordinate
  auto buckets = [&](size_t i0, size_t cnt, uint32_t* bucket) {
    size_t j = 0;
#if defined(__x86_64__)
    {
      // With tiles: the tile of cell (cx, cy) is (cy >> sh) * tiles_x + (cx >> sh), the shifts
      // as an exact multiply by 2^-sh and a truncation.
      const __m128 vx0 = _mm_set1_ps(x0), vy0 = _mm_set1_ps(y0), vinv = _mm_set1_ps(inv), zero = _mm_setzero_ps();
      const __m128 xmax1 = _mm_set1_ps((float)(nxi - 1)), ymax1 = _mm_set1_ps((float)(nyi - 1));
      const __m128 row = _mm_set1_ps(sh == 0 ? (float)nxi : (float)g->tiles_x_), down = _mm_set1_ps(1.f / (float)(1 << sh));
      for (; j + 4 <= cnt; j += 4) {
        const __m128 X = _mm_loadu_ps(px + i0 + j), Y = _mm_loadu_ps(py + i0 + j), Z = _mm_loadu_ps(pz + i0 + j);
        const __m128 ok = _mm_cmpeq_ps(_mm_add_ps(_mm_add_ps(_mm_sub_ps(X, X), _mm_sub_ps(Y, Y)), _mm_sub_ps(Z, Z)), zero);
        const __m128 fx = _mm_min_ps(_mm_max_ps(_mm_mul_ps(_mm_sub_ps(X, vx0), vinv), zero), xmax1);
        const __m128 fy = _mm_min_ps(_mm_max_ps(_mm_mul_ps(_mm_sub_ps(Y, vy0), vinv), zero), ymax1);
        __m128 cx = _mm_cvtepi32_ps(_mm_cvttps_epi32(fx)), cy = _mm_cvtepi32_ps(_mm_cvttps_epi32(fy));
        if (sh > 0)
          cx = _mm_cvtepi32_ps(_mm_cvttps_epi32(_mm_mul_ps(cx, down))), cy = _mm_cvtepi32_ps(_mm_cvttps_epi32(_mm_mul_ps(cy, down)));
        const __m128i cid = _mm_cvttps_epi32(_mm_add_ps(_mm_mul_ps(cy, row), cx));
        const __m128i oki = _mm_castps_si128(ok);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(bucket + j),
                         _mm_or_si128(_mm_and_si128(oki, cid), _mm_andnot_si128(oki, _mm_set1_epi32(-1))));
      }
    }
#endif
    for (; j < cnt; ++j) {
      const size_t i = i0 + j;
      if (!finite3(px[i], py[i], pz[i])) {
        bucket[j] = kSkip;
      } else if (sh == 0) {
        bucket[j] = (uint32_t)clamp_cell((py[i] - y0) * inv, nyi) * (uint32_t)nxi + (uint32_t)clamp_cell((px[i] - x0) * inv, nxi);
      } else {
        bucket[j] = (uint32_t)(slot_of(px[i], py[i]) >> (2 * sh));
      }
    }
  };
  // Consecutive points of a scan or a tile mostly share a bucket: both passes work on runs of
  // one bucket, so that a counter is not incremented through memory once per point (each
  // increment of the same counter waits for the previous store: ~20% of the build in `perf`).
  //
  // A large cloud is cut into parts of consecutive points (graph/parallel.h) that count and
  // scatter in parallel: part k writes bucket b's points after those of parts 0..k-1, so ids stay
  // ascending within a bucket and the index is the same whatever the thread count; a small
  // cloud is one part.
  const size_t n_blocks = part_count(n);
  // counts[k * (n_tiles + 1) + b]: part k's points in bucket b; then, after the prefix pass,
  // where part k writes its first point of bucket b.
  const size_t row = n_tiles + 1;
  std::vector<uint32_t> counts(n_blocks * row, 0);
  parallel_parts(n, [&](size_t lo, size_t hi) {
    uint32_t bucket[kChunk];
    uint32_t* const cnt_of = counts.data() + lo / kPartSize * row;
    uint32_t prev = kSkip, run = 0;
    for (size_t i0 = lo; i0 < hi; i0 += kChunk) {
      const size_t cnt = std::min(kChunk, hi - i0);
      buckets(i0, cnt, bucket);
      for (size_t j = 0; j < cnt; ++j) {
        const uint32_t bk = bucket[j];
        if (bk != prev) {
          if (prev != kSkip) cnt_of[prev] += run;
          prev = bk, run = 0;
        }
        ++run;
      }
    }
    if (prev != kSkip) cnt_of[prev] += run;
  });
  // first[b]: where bucket b starts; each block's count becomes its write cursor.
  std::vector<uint32_t> first(n_tiles + 1, 0);
  {
    uint32_t at = 0;
    for (size_t b = 0; b < n_tiles; ++b) {
      first[b] = at;
      for (size_t k = 0; k < n_blocks; ++k) {
        const uint32_t c = counts[k * row + b];
        counts[k * row + b] = at, at += c;
      }
    }
    first[n_tiles] = at;
  }
  const size_t m = first[n_tiles];
  // Padded with zeros: the kernels may load up to kPad ids past the last one.
  g->ids_.allocate(m + kPad);
  uint32_t* const ids = g->ids_.data();
  std::fill(ids + m, ids + m + kPad, 0u);
  parallel_parts(n, [&](size_t lo, size_t hi) {
    uint32_t bucket[kChunk];
    uint32_t* const cur = counts.data() + lo / kPartSize * row;
    uint32_t prev = kSkip, at = 0;  // the current run's bucket and its write position
    for (size_t i0 = lo; i0 < hi; i0 += kChunk) {
      const size_t cnt = std::min(kChunk, hi - i0);
      buckets(i0, cnt, bucket);
      for (size_t j = 0; j < cnt; ++j) {
        const uint32_t bk = bucket[j];
        if (bk != prev) {
          if (prev != kSkip) cur[prev] = at;
          prev = bk;
          if (bk != kSkip) at = cur[bk];
        }
        if (bk != kSkip) ids[at++] = (uint32_t)(i0 + j);
      }
    }
    if (prev != kSkip) cur[prev] = at;
  });
  uint32_t* const start = g->start_.data();
  start[n_tiles * per_tile] = (uint32_t)m;
  if (sh == 0) {
    std::copy(first.begin(), first.end() - 1, start);
  } else {
    // Level 2: each tile, copied aside, back in cell order; tiles are independent, so in
    // parallel, each range of tiles with scratch of its own.
    tbb::parallel_for(tbb::blocked_range<size_t>(0, n_tiles, 16), [&](const tbb::blocked_range<size_t>& r) {
      size_t biggest = 0;
      for (size_t t = r.begin(); t < r.end(); ++t) biggest = std::max<size_t>(biggest, first[t + 1] - first[t]);
      // The local slot of each point of a tile is computed once (from the cloud through its
      // id) and kept beside the copied ids.
      std::vector<uint32_t> t_ids(biggest), t_slot(biggest), local(per_tile);
      for (size_t t = r.begin(); t < r.end(); ++t) {
        const uint32_t a = first[t], len = first[t + 1] - first[t];
        uint32_t* const st = start + t * per_tile;
        std::fill(local.begin(), local.end(), 0u);
        for (uint32_t j = 0; j < len; ++j) {
          const uint32_t id = ids[a + j];
          t_ids[j] = id;
          ++local[t_slot[j] = (uint32_t)(slot_of(px[id], py[id]) & (per_tile - 1))];
        }
        uint32_t at = a;
        for (size_t l = 0; l < per_tile; ++l) {
          const uint32_t k = local[l];
          st[l] = local[l] = at, at += k;  // the slot's start, and its write cursor
        }
        for (uint32_t j = 0; j < len; ++j) ids[local[t_slot[j]]++] = t_ids[j];
      }
    });
  }
  return g;
}

std::vector<uint32_t> crop_polyline(const PointCloud& cloud, const GridIndex& g,
                                    const Polyline& line, float radius, float z_min, float z_max) {
  if (g.cloud_size_ != cloud.size())
    fail("crop_polyline", "the index was built for a cloud of " + std::to_string(g.cloud_size_) +
                              " points, this one has " + std::to_string(cloud.size()));
  std::vector<uint32_t> out;
  if (!(radius >= 0) || line.points.empty() || g.size() == 0) return out;
  // Room for about as many ids as this thread's previous crop kept (crops of one pipeline are
  // alike): one allocation instead of a dozen growths and copies.
  thread_local size_t last_size = 0;
  out.reserve(std::min<size_t>(last_size + last_size / 4 + 64, g.size()));
  const std::vector<Seg> segs = make_segments(line);
  const float r2 = radius * radius;
  const bool z_band = z_min > -INFINITY || z_max < INFINITY;

  // The candidate segments of a cell: every segment whose radius-neighbourhood may touch it,
  // i.e. whose distance to the cell centre is within radius + half the cell's diagonal (the
  // slack covers float rounding of the cell assignment at cell borders). A cell keeps the
  // range [k0, k1] of its candidates' indices: the segments in between that are out of reach
  // change nothing (a point within the radius of a segment has it in range; with a z band the
  // nearest segment of a kept point is within the radius, so in range, and ascending order
  // keeps the reference's tie rule), and a polyline's candidates are nearly always contiguous.
  // kn is the candidate nearest the cell centre: without a z band the test starts there, so
  // that a point inside the corridor is decided by its first segment.
  const float half_diag = 0.7071068f * g.cell_;
  const float reach = (radius + half_diag) * 1.0001f + 1e-6f;
  const float reach2 = reach * reach;
  struct Cand {
    uint32_t k0 = UINT32_MAX, k1 = 0, kn = 0;
    float dn = INFINITY;
  };
  // The cells each segment may touch: its bounding box grown by the radius, clamped to the grid
  // (a segment entirely outside the grid finds nothing).
  struct Box {
    int cx0, cx1, cy0, cy1;
  };
  thread_local std::vector<Box> boxes;
  boxes.assign(segs.size(), Box{1, 0, 1, 0});
  int bx_lo = INT32_MAX, bx_hi = INT32_MIN, by_lo = INT32_MAX, by_hi = INT32_MIN;
  for (size_t k = 0; k < segs.size(); ++k) {
    const Seg& sg = segs[k];
    const float bx0 = std::min(sg.ax, sg.ax + sg.dx) - radius, bx1 = std::max(sg.ax, sg.ax + sg.dx) + radius;
    const float by0 = std::min(sg.ay, sg.ay + sg.dy) - radius, by1 = std::max(sg.ay, sg.ay + sg.dy) + radius;
    if (bx1 < g.x0_ || by1 < g.y0_ || bx0 > g.x0_ + g.nx_ * g.cell_ || by0 > g.y0_ + g.ny_ * g.cell_) continue;
    Box& bx = boxes[k];
    bx = {g.cell_x(bx0), g.cell_x(bx1), g.cell_y(by0), g.cell_y(by1)};
    bx_lo = std::min(bx_lo, bx.cx0), bx_hi = std::max(bx_hi, bx.cx1);
    by_lo = std::min(by_lo, bx.cy0), by_hi = std::max(by_hi, bx.cy1);
  }
  if (bx_lo > bx_hi) return out;
  // Calls f(k, cx, cy, d2 of the centre) for every (segment, cell) pair in reach, k ascending.
  // Four cells of a row at a time on x86-64 (the same arithmetic as dist2_to, lane by lane).
  auto for_each_pair = [&](auto&& f) {
    for (size_t k = 0; k < segs.size(); ++k) {
      const Box& bx = boxes[k];
      const Seg& sg = segs[k];
      for (int cy = bx.cy0; cy <= bx.cy1; ++cy) {
        const float my = g.y0_ + (cy + 0.5f) * g.cell_;
        int cx = bx.cx0;
#if defined(__x86_64__)
        const __m128 zero = _mm_setzero_ps(), one = _mm_set1_ps(1.f), dx = _mm_set1_ps(sg.dx), dy = _mm_set1_ps(sg.dy);
        const __m128 py = _mm_set1_ps(my - sg.ay), pyy = _mm_mul_ps(py, dy);
        for (; cx + 3 <= bx.cx1; cx += 4) {
          const __m128 mx = _mm_add_ps(_mm_set1_ps(g.x0_),
                                       _mm_mul_ps(_mm_add_ps(_mm_cvtepi32_ps(_mm_setr_epi32(cx, cx + 1, cx + 2, cx + 3)),
                                                             _mm_set1_ps(0.5f)),
                                                  _mm_set1_ps(g.cell_)));
          const __m128 px = _mm_sub_ps(mx, _mm_set1_ps(sg.ax));
          __m128 t = _mm_mul_ps(_mm_add_ps(_mm_mul_ps(px, dx), pyy), _mm_set1_ps(sg.inv_len2));
          __m128 lt = _mm_cmplt_ps(t, zero);
          t = _mm_or_ps(_mm_and_ps(lt, zero), _mm_andnot_ps(lt, t));
          lt = _mm_cmplt_ps(one, t);
          t = _mm_or_ps(_mm_and_ps(lt, one), _mm_andnot_ps(lt, t));
          const __m128 ex = _mm_sub_ps(px, _mm_mul_ps(t, dx)), ey = _mm_sub_ps(py, _mm_mul_ps(t, dy));
          const __m128 d2 = _mm_add_ps(_mm_mul_ps(ex, ex), _mm_mul_ps(ey, ey));
          int in = _mm_movemask_ps(_mm_cmple_ps(d2, _mm_set1_ps(reach2)));
          if (!in) continue;
          alignas(16) float d[4];
          _mm_store_ps(d, d2);
          for (; in; in &= in - 1) {
            const int l = __builtin_ctz(in);
            f((uint32_t)k, cx + l, cy, d[l]);
          }
        }
#endif
        for (; cx <= bx.cx1; ++cx) {
          float za;
          const float d2 = dist2_to(sg, g.x0_ + (cx + 0.5f) * g.cell_, my, &za);
          if (d2 <= reach2) f((uint32_t)k, cx, cy, d2);
        }
      }
    }
  };
  auto add = [](Cand& c, uint32_t k, float d2) {
    if (c.k0 == UINT32_MAX) c.k0 = c.kn = k;  // kn stays in [k0, k1] even if no d2 is below +inf
    c.k1 = k;
    if (d2 < c.dn) c.dn = d2, c.kn = k;
  };

  const Columns cols = xyz_of(cloud, "crop_polyline");
  // The vector kernels load ids as signed 32-bit lanes.
  const KeepCellFn keep_cell = cloud.size() <= (size_t)INT32_MAX ? kernel().fn : crop_detail::keep_cell_scalar;
  CellTest test;
  test.r2 = r2, test.z_band = z_band, test.z_min = z_min, test.z_max = z_max;
  const float inner2 = r2 * (1.f - 1e-4f) - 1e-6f;
  auto visit = [&](int cx, int cy, const Cand& c) {
    const size_t slot = g.slot(cx, cy);
    const uint32_t a = g.start_[slot], b = g.start_[slot + 1];
    if (a == b) return;
    // A cell whose four corners all lie within the radius of one segment lies wholly within it
    // (the distance to a segment is convex): its points are kept without a test. The margin
    // covers float rounding of the corners and of points assigned to the cell at its borders.
    // Only the nearest candidate is tried: a cell inside the corridor is nearly always inside
    // it, and a miss only costs the per-point test.
    if (!z_band) {
      const Seg& sg = segs[c.kn];
      const float x0 = g.x0_ + cx * g.cell_, y0 = g.y0_ + cy * g.cell_, x1 = x0 + g.cell_, y1 = y0 + g.cell_;
      float za;
      if (dist2_to(sg, x0, y0, &za) <= inner2 && dist2_to(sg, x1, y0, &za) <= inner2 &&
          dist2_to(sg, x0, y1, &za) <= inner2 && dist2_to(sg, x1, y1, &za) <= inner2) {
        out.insert(out.end(), g.ids_.data() + a, g.ids_.data() + b);
        return;
      }
    }
    test.segs = segs.data() + c.k0, test.nsegs = c.k1 - c.k0 + 1;
    test.first = z_band ? 0 : c.kn - c.k0;
    const size_t used = out.size();
    out.resize(used + (b - a));
    out.resize(used + keep_cell(cols.x, cols.y, cols.z, g.ids_.data(), a, b, test, out.data() + used));
  };

  const size_t W = (size_t)(bx_hi - bx_lo + 1), H = (size_t)(by_hi - by_lo + 1);
  if (W * H <= (size_t(1) << 20)) {
    // A dense box of cells over the line's extent.
    thread_local std::vector<Cand> box;
    box.assign(W * H, Cand{});
    for_each_pair([&](uint32_t k, int cx, int cy, float d2) {
      add(box[(size_t)(cy - by_lo) * W + (size_t)(cx - bx_lo)], k, d2);
    });
    for (size_t i = 0; i < W * H; ++i)
      if (box[i].k0 != UINT32_MAX) visit(bx_lo + (int)(i % W), by_lo + (int)(i / W), box[i]);
    if (box.capacity() > (size_t(1) << 16)) std::vector<Cand>().swap(box);  // a huge line's box is not kept per thread
  } else {
    // A line spanning a huge grid: sort the (cell, segment) pairs instead.
    struct Pair {
      uint64_t key;  // cell id << 32 | segment
      float d2;
    };
    std::vector<Pair> pairs;
    for_each_pair([&](uint32_t k, int cx, int cy, float d2) {
      pairs.push_back({((uint64_t)cy * (uint64_t)g.nx_ + (uint64_t)cx) << 32 | k, d2});
    });
    std::sort(pairs.begin(), pairs.end(), [](const Pair& x, const Pair& y) { return x.key < y.key; });
    for (size_t i = 0; i < pairs.size();) {
      const uint64_t cid = pairs[i].key >> 32;
      Cand c;
      for (; i < pairs.size() && (pairs[i].key >> 32) == cid; ++i) add(c, (uint32_t)pairs[i].key, pairs[i].d2);
      visit((int)(cid % (uint64_t)g.nx_), (int)(cid / (uint64_t)g.nx_), c);
    }
  }
  // Not sorted by id: the cells' order is the order of the result (crop.h). Sorting (a bitmap
  // over the id span) was ~25% of a crop's time, and resample draws at random from the crop.
  last_size = out.size();
  return out;
}

const char* crop_kernel() { return kernel().name; }

std::vector<std::string> crop_kernels() {
  std::vector<std::string> names;
  for (const Kernel& k : all_kernels())
    if (k.runs) names.push_back(k.name);
  return names;
}

void use_crop_kernel(const std::string& name) {
  static const std::vector<Kernel> kernels = all_kernels();
  if (name.empty()) {
    g_kernel.store(nullptr);
    return;
  }
  for (const Kernel& k : kernels)
    if (k.runs && name == k.name) {
      g_kernel.store(&k);
      return;
    }
  fail("use_crop_kernel", "no kernel '" + name + "' on this CPU");
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
