#include "geometry/group.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <utility>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "graph/error.h"

namespace sl {
namespace {

struct Columns {
  const float *x, *y, *z, *intensity;  // intensity null when the cloud has none
};

Columns check_inputs(const PointCloud& cloud, const Tensor& line, int k, float radius, const char* who) {
  const int fx = cloud.field_index("x"), fy = cloud.field_index("y"), fz = cloud.field_index("z"),
            fi = cloud.field_index("intensity");
  if (fx < 0 || fy < 0 || fz < 0) fail(who, "the cloud has no x, y or z field");
  if (line.shape.size() != 2 || line.shape[1] != 3) fail(who, "the line must be [L, 3], got " + line.shape_str());
  if (k < 1) fail(who, "k must be at least 1, got " + std::to_string(k));
  if (!(radius > 0) || !std::isfinite(radius)) fail(who, "radius must be a positive finite number, got " + std::to_string(radius));
  return {cloud.columns[(size_t)fx].data(), cloud.columns[(size_t)fy].data(), cloud.columns[(size_t)fz].data(),
          fi < 0 ? nullptr : cloud.columns[(size_t)fi].data()};
}

void check_aspect(float aspect, const char* who) {
  if (!(aspect >= 1.f) || !std::isfinite(aspect)) fail(who, "aspect must be a finite number >= 1, got " + std::to_string(aspect));
}

[[noreturn]] void bad_id(const char* who, uint32_t id, size_t n) {
  fail(who, "crop id " + std::to_string(id) + " is out of range for a cloud of " + std::to_string(n) + " points");
}

// The one distance both methods compute (this file is compiled with -ffp-contract=off, so the
// same floats in both).
inline float dist2(float x, float y, float qx, float qy) {
  const float dx = x - qx, dy = y - qy;
  return dx * dx + dy * dy;
}

// The window's shape at line point l: the unit xy tangent of the line there (central differences,
// one-sided at the ends) and w = aspect^2 - 1, so that the rank distance is
// d2 + w (t . delta)^2 = lateral^2 + aspect^2 along^2. w = 0 (a circle) for aspect 1 and where
// the tangent vanishes or is not finite.
struct Shape {
  float tx = 1, ty = 0, w = 0;
};
Shape shape_at(const Tensor& line, int64_t l, float aspect) {
  Shape s;
  if (aspect == 1.f) return s;
  const int64_t L = line.shape[0];
  const float* a = &line.data[(size_t)std::max<int64_t>(l - 1, 0) * 3];
  const float* b = &line.data[(size_t)std::min<int64_t>(l + 1, L - 1) * 3];
  const float dx = b[0] - a[0], dy = b[1] - a[1];
  const float n = std::sqrt(dx * dx + dy * dy);
  if (!(n > 0) || !std::isfinite(n)) return s;
  s.tx = dx / n, s.ty = dy / n, s.w = aspect * aspect - 1.f;
  return s;
}
// The rank distance of a point at squared xy distance d2 and offset (dx, dy) from the line point.
inline float rank_dist2(float d2, float dx, float dy, const Shape& s) {
  if (s.w == 0.f) return d2;
  const float along = s.tx * dx + s.ty * dy;
  return d2 + s.w * (along * along);
}

// (squared distance, id) as one integer: a non-negative float's bits order as the float does,
// so one integer compare is the rule "nearest first, then the lower id".
inline uint64_t rank_key(float d2, uint32_t id) {
  uint32_t bits;
  std::memcpy(&bits, &d2, sizeof bits);
  return (uint64_t)bits << 32 | id;
}

// The ranks `spread` keeps of n sorted keys (n > k): floor(i n / k), strictly increasing.
size_t spread_rank(size_t i, size_t n, size_t k) { return (size_t)((uint64_t)i * (uint64_t)n / (uint64_t)k); }

Groups make_groups(int64_t L, int k) {
  Groups g;
  g.local = Tensor({L, (int64_t)k, 4});  // zero-filled: the rows of an empty window
  g.count = Tensor({L});
  return g;
}

// Group l from its selected keys (nearest first): the offsets and intensity, then the padding.
void write_group(const Columns& c, const float* q, const uint64_t* keys, size_t n, int k, float* rows, float* count) {
  *count = (float)n;
  for (size_t j = 0; j < n; ++j) {
    const uint32_t id = (uint32_t)keys[j];
    float* r = rows + j * 4;
    r[0] = c.x[id] - q[0], r[1] = c.y[id] - q[1], r[2] = c.z[id] - q[2];
    r[3] = c.intensity ? c.intensity[id] : 0.f;
  }
  if (n > 0)
    for (size_t j = n; j < (size_t)k; ++j) std::memcpy(rows + j * 4, rows, 4 * sizeof(float));
}

inline float key_dist2(uint64_t key) {
  const uint32_t bits = (uint32_t)(key >> 32);
  float d2;
  std::memcpy(&d2, &bits, sizeof d2);
  return d2;
}

// The k smallest of a[0..n) moved to a[0..k), a[k - 1] the k-th (0 < k <= n): quickselect with
// branch-free Lomuto partitions (a partition step's compare is a coin flip for the branch
// predictor: std::nth_element's branchy one was most of the grouping's selection time), the last
// few elements by insertion. Keys are unique here (the id is in the low bits); should a range
// not shrink (equal keys), std::nth_element finishes it.
void select_k(uint64_t* a, size_t n, size_t k) {
  size_t lo = 0, hi = n;  // the k-th smallest lies in [lo, hi)
  while (hi - lo > 16) {
    const uint64_t x = a[lo], y = a[lo + (hi - lo) / 2], z = a[hi - 1];
    const uint64_t p = std::max(std::min(x, y), std::min(std::max(x, y), z));  // median of three
    size_t m = lo;
    for (size_t i = lo; i < hi; ++i) {
      const uint64_t v = a[i];
      a[i] = a[m], a[m] = v;
      m += v < p;
    }
    // [lo, m) < p <= [m, hi)
    if (m == lo) {
      std::nth_element(a + lo, a + (k - 1), a + hi);
      return;
    }
    if (k <= m) hi = m;
    else lo = m;
  }
  // The last few by their ranks (how many keys precede each, equal keys by position), counted
  // branch-free: an insertion sort's compares here were as unpredictable as the partitions'.
  const size_t m = hi - lo;
  if (m <= 1) return;
  uint64_t v[16];
  uint8_t rank[16];
  std::memcpy(v, a + lo, m * sizeof(uint64_t));
  for (size_t i = 0; i < m; ++i) {
    unsigned r = 0;
    for (size_t j = 0; j < m; ++j) r += (v[j] < v[i]) | ((v[j] == v[i]) & (j < i));
    rank[i] = (uint8_t)r;
  }
  for (size_t i = 0; i < m; ++i) a[lo + rank[i]] = v[i];
}

// Sorts a[0..n) ascending for n <= 64 keys below 2^63 (a rank key's high half is a non-negative
// float): each key is placed at its rank, the count of keys below it, counted four at a time
// with AVX2 compares and no branch (std::sort's compares on these keys are coin flips; its sort
// of a group's 64 keys was a fifth of the grouping). Returns false, leaving a as it was, when two
// keys are equal (a crop listing a point twice) or n > 64: the caller sorts instead.
#if defined(__x86_64__)
__attribute__((target("avx2"))) bool sort_by_rank_avx2(uint64_t* a, size_t n) {
  if (n <= 1) return true;  // sorted already (and a may be null when n is 0: no memcpy from it)
  if (n > 64) return false;
  alignas(32) int64_t v[64];
  alignas(32) uint64_t out[64];
  const size_t m = (n + 3) & ~size_t(3);
  std::memcpy(v, a, n * sizeof(uint64_t));
  for (size_t i = n; i < m; ++i) v[i] = std::numeric_limits<int64_t>::max();  // never below a key
  uint64_t seen = 0;
  for (size_t i = 0; i < n; ++i) {
    const __m256i x = _mm256_set1_epi64x(v[i]);
    __m256i c0 = _mm256_setzero_si256(), c1 = _mm256_setzero_si256();
    size_t j = 0;
    for (; j + 8 <= m; j += 8) {  // x > v[j]: -1 per lane, so the counts grow by subtracting
      c0 = _mm256_sub_epi64(c0, _mm256_cmpgt_epi64(x, _mm256_load_si256(reinterpret_cast<const __m256i*>(v + j))));
      c1 = _mm256_sub_epi64(c1, _mm256_cmpgt_epi64(x, _mm256_load_si256(reinterpret_cast<const __m256i*>(v + j + 4))));
    }
    if (j < m) c0 = _mm256_sub_epi64(c0, _mm256_cmpgt_epi64(x, _mm256_load_si256(reinterpret_cast<const __m256i*>(v + j))));
    const __m256i c = _mm256_add_epi64(c0, c1);
    const __m128i h = _mm_add_epi64(_mm256_castsi256_si128(c), _mm256_extracti128_si256(c, 1));
    const uint64_t r = (uint64_t)_mm_cvtsi128_si64(h) + (uint64_t)_mm_extract_epi64(h, 1);
    seen |= uint64_t(1) << r;
    out[r] = (uint64_t)v[i];
  }
  if (seen != (n == 64 ? ~uint64_t(0) : (uint64_t(1) << n) - 1)) return false;  // equal keys share a rank
  std::memcpy(a, out, n * sizeof(uint64_t));
  return true;
}
#endif

// a[0..n) ascending: by ranks on a CPU with AVX2 when they are distinct, else std::sort.
void sort_keys(uint64_t* a, size_t n) {
#if defined(__x86_64__)
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (avx2 && sort_by_rank_avx2(a, n)) return;
#endif
  std::sort(a, a + n);
}

// A crop point in the grid: its x, y and cloud id, one 16-byte store when the points are sorted by
// cell (three arrays were three scattered stores a point, the most of the sort's time).
struct CellPoint {
  float x, y;
  uint32_t id, pad;
};

// A thread's buffers for group_points, kept between calls.
struct Scratch {
  std::vector<uint32_t> start, fill;
  std::vector<int32_t> cell_of;
  std::vector<float> xs, ys;  // the crop's x, y in its order (read once from the cloud)
  std::vector<CellPoint> sorted;  // the same with their ids, cell by cell
  std::vector<uint64_t> cand, cells;
};

}  // namespace

GroupSelect parse_group_select(const std::string& name, const std::string& where) {
  if (name == "nearest") return GroupSelect::kNearest;
  if (name == "spread") return GroupSelect::kSpread;
  fail(where, "unknown selection '" + name + "' (nearest or spread)");
}

Groups group_points_reference(const PointCloud& cloud, const std::vector<uint32_t>& crop, const Tensor& line, int k,
                              float radius, GroupSelect select, float aspect) {
  const char* who = "group_points_reference";
  const Columns c = check_inputs(cloud, line, k, radius, who);
  check_aspect(aspect, who);
  const int64_t L = line.shape[0];
  Groups g = make_groups(L, k);
  const float r2 = radius * radius;
  for (uint32_t id : crop)
    if (id >= cloud.size()) bad_id(who, id, cloud.size());
  std::vector<std::pair<float, uint32_t>> in;
  std::vector<uint64_t> keys;
  for (int64_t l = 0; l < L; ++l) {
    const float* q = &line.data[(size_t)l * 3];
    const Shape sh = shape_at(line, l, aspect);
    in.clear();
    for (uint32_t id : crop) {
      const float d2 = dist2(c.x[id], c.y[id], q[0], q[1]);
      // a NaN distance (non-finite point or line point) is never within
      if (d2 <= r2) in.push_back({rank_dist2(d2, c.x[id] - q[0], c.y[id] - q[1], sh), id});
    }
    std::sort(in.begin(), in.end());
    keys.clear();
    if (select == GroupSelect::kSpread && in.size() > (size_t)k) {
      for (size_t i = 0; i < (size_t)k; ++i) {
        const auto& p = in[spread_rank(i, in.size(), (size_t)k)];
        keys.push_back(rank_key(p.first, p.second));
      }
    } else {
      for (size_t j = 0; j < in.size() && j < (size_t)k; ++j) keys.push_back(rank_key(in[j].first, in[j].second));
    }
    write_group(c, q, keys.data(), keys.size(), k, &g.local.data[(size_t)l * (size_t)k * 4], &g.count.data[(size_t)l]);
  }
  return g;
}

Groups group_points(const PointCloud& cloud, const std::vector<uint32_t>& crop, const Tensor& line, int k,
                    float radius, GroupSelect select, float aspect) {
  const char* who = "group_points";
  const Columns c = check_inputs(cloud, line, k, radius, who);
  check_aspect(aspect, who);
  const int64_t L = line.shape[0];
  Groups g = make_groups(L, k);
  const float r2 = radius * radius;
  const size_t n_crop = crop.size(), n_cloud = cloud.size();
  {
    // The largest id against the cloud's size: a reduction the compiler vectorizes (a check per
    // id, with its early exit, was a scalar loop over the whole crop).
    uint32_t top = 0;
    for (uint32_t id : crop) top = std::max(top, id);
    if (n_crop > 0 && top >= n_cloud)
      for (uint32_t id : crop)
        if (id >= n_cloud) bad_id(who, id, n_cloud);
  }

  // The grid lies in the line's frame: axis u from the first finite line point to the last (the
  // line's overall direction), v across it, the origin at the first. There a window's ellipse
  // (aspect > 1: its K nearest lie in a strip across the line, a few cm along it) falls in one or
  // two columns of cells narrow along the line, wherever the line runs in the scene's axes.
  int64_t first = -1, last = -1;
  for (int64_t l = 0; l < L; ++l)
    if (std::isfinite(line.data[(size_t)l * 3]) && std::isfinite(line.data[(size_t)l * 3 + 1])) {
      if (first < 0) first = l;
      last = l;
    }
  if (n_crop == 0 || first < 0) return g;  // nothing to group, or no finite line point
  const float ox = line.data[(size_t)first * 3], oy = line.data[(size_t)first * 3 + 1];
  float ux = 1, uy = 0;
  {
    const float dx = line.data[(size_t)last * 3] - ox, dy = line.data[(size_t)last * 3 + 1] - oy;
    const float n = std::sqrt(dx * dx + dy * dy);
    if (n > 0 && std::isfinite(n)) ux = dx / n, uy = dy / n;  // else (a closed or one-point line) the x axis
  }
  auto fa = [&](float x, float y) { return ux * (x - ox) + uy * (y - oy); };
  auto fb = [&](float x, float y) { return ux * (y - oy) - uy * (x - ox); };
  float alo = std::numeric_limits<float>::infinity(), ahi = -alo, blo = alo, bhi = -alo;
  for (int64_t l = first; l <= last; ++l) {
    const float qx = line.data[(size_t)l * 3], qy = line.data[(size_t)l * 3 + 1];
    if (!std::isfinite(qx) || !std::isfinite(qy)) continue;
    const float a = fa(qx, qy), b = fb(qx, qy);
    alo = std::min(alo, a), ahi = std::max(ahi, a), blo = std::min(blo, b), bhi = std::max(bhi, b);
  }
  // Rounding: the frame's coordinates, the cells' edges and their bounds are floats. `slack`
  // (1e-5 of the magnitudes involved, ~80 float steps) widens the grid's box and shrinks every
  // bound, so that every point the exact test accepts lies in a visited cell and no bound exceeds
  // a key the exact test computes (from the scene's coordinates, as the reference); the test
  // itself decides.
  const float slack =
      1e-5f * (std::fabs(ox) + std::fabs(oy) + 2 * ((ahi - alo) + (bhi - blo)) + 4 * radius);
  const float m = radius + slack;
  const float a0 = alo - m, a1 = ahi + m, b0 = blo - m, b1 = bhi + m;
  // Cells of about kPerCell points on the crop's mean density over the box, kRatio times as long
  // across the line as along it when the window is an ellipse, between an eighth and half the
  // radius across; enlarged when a very long line's box would need too many (memory bounded).
  constexpr double kPerCell = 12, kRatio = 2, kMaxCells = 1 << 20;
  const double ratio = aspect > 1.f ? kRatio : 1.0;
  double cb = std::sqrt(kPerCell * ratio * (double)(a1 - a0) * (double)(b1 - b0) / (double)n_crop);
  cb = std::clamp(cb, (double)radius / 8, (double)radius / 2);
  double ca = cb / ratio;
  const double cells = std::ceil((a1 - a0) / ca) * std::ceil((b1 - b0) / cb);
  if (cells > kMaxCells) {
    const double f = std::sqrt(cells / kMaxCells) * 1.01;
    ca *= f, cb *= f;
  }
  const float cell_a = (float)ca, cell_b = (float)cb, inv_a = 1.f / cell_a, inv_b = 1.f / cell_b;
  const int nx = (int)((a1 - a0) * inv_a) + 1, ny = (int)((b1 - b0) * inv_b) + 1;
  // Truncation of a non-negative value is floor; below the box's low edge it clamps to 0.
  auto col_of = [&](float a) { return std::clamp((int)((a - a0) * inv_a), 0, nx - 1); };
  auto row_of = [&](float b) { return std::clamp((int)((b - b0) * inv_b), 0, ny - 1); };

  // Counting sort of the crop by cell (column-major: a column's cells are one run): the scene's
  // coordinates and ids cell by cell. The buffers are the thread's own, reused across samples.
  thread_local Scratch t;
  t.start.assign((size_t)nx * (size_t)ny + 1, 0);
  t.cell_of.resize(n_crop);
  t.xs.resize(n_crop), t.ys.resize(n_crop);
  // The one pass that reads the cloud's x and y: scattered (the crop lists points by the scene's
  // cells, and a cell's points lie far apart in a map's file), so they are prefetched kAhead points
  // ahead (measured on a map: 12% off the whole data path's CPU time with the grouping).
  constexpr size_t kAhead = 32;
  // Raw pointers in the loops: through the vectors the compiler reloads their data after a store.
  // Three loops: the reads (scattered, prefetched), the cells (from the copies: a loop without
  // a load through an id or a store to a counter, which the compiler vectorizes), the counts.
  {
    const uint32_t* const ids = crop.data();
    float *const xs = t.xs.data(), *const ys = t.ys.data();
    int32_t* const cell_of = t.cell_of.data();
    uint32_t* const start = t.start.data();
    const size_t n_ahead = n_crop > kAhead ? n_crop - kAhead : 0;
    size_t j = 0;
    for (; j < n_ahead; ++j) {
      __builtin_prefetch(c.x + ids[j + kAhead]), __builtin_prefetch(c.y + ids[j + kAhead]);
      xs[j] = c.x[ids[j]], ys[j] = c.y[ids[j]];
    }
    for (; j < n_crop; ++j) xs[j] = c.x[ids[j]], ys[j] = c.y[ids[j]];
    const float inv_a_ = inv_a, inv_b_ = inv_b, top_a = (float)(nx - 1), top_b = (float)(ny - 1);
    const int32_t ny_ = ny;
    for (j = 0; j < n_crop; ++j) {
      const float x = xs[j], y = ys[j];
      const float a = ux * (x - ox) + uy * (y - oy), b = ux * (y - oy) - uy * (x - ox);  // fa, fb
      // col_of, row_of: clamped as floats first (NaN to 0), so that the conversion is always defined
      const float sa = (a - a0) * inv_a_, sb = (b - b0) * inv_b_;
      const int32_t col = (int32_t)std::min(sa > 0.f ? sa : 0.f, top_a), row = (int32_t)std::min(sb > 0.f ? sb : 0.f, top_b);
      // outside every window (or not finite): -1
      const bool in = (a >= a0) & (a <= a1) & (b >= b0) & (b <= b1);
      cell_of[j] = in ? col * ny_ + row : -1;
    }
    for (j = 0; j < n_crop; ++j) ++start[(size_t)(cell_of[j] + 1)];  // [0] counts the points outside, reset below
  }
  t.start[0] = 0;  // it counted the points outside
  uint32_t most = 0;  // the fullest cell
  for (size_t s = 1; s < t.start.size(); ++s) most = std::max(most, t.start[s]), t.start[s] += t.start[s - 1];
  const size_t n_in = t.start.back();
  if (t.sorted.size() < n_in) t.sorted.resize(n_in);
  t.fill.assign(t.start.begin(), t.start.end() - 1);
  {
    const uint32_t* const ids = crop.data();
    const float *const xs = t.xs.data(), *const ys = t.ys.data();
    const int32_t* const cell_of = t.cell_of.data();
    uint32_t* const fill = t.fill.data();
    CellPoint* const sorted = t.sorted.data();
    for (size_t j = 0; j < n_crop; ++j) {
      const int32_t s = cell_of[j];
      if (s < 0) continue;
      const uint32_t at = fill[s]++;
      sorted[at] = CellPoint{xs[j], ys[j], ids[j], 0};
    }
  }

  const size_t K = (size_t)k;
  const bool spread = select == GroupSelect::kSpread;
  // nearest: candidates are appended (a cell at a time) and cut to the K smallest keys when
  // they reach 2K; spread: every point of a window (at most n_in), no cut.
  const size_t cap = spread ? std::numeric_limits<size_t>::max() : 2 * K;
  const size_t need = (spread ? n_in : cap) + most;
  if (t.cand.size() < need) t.cand.resize(need);
  const CellPoint* const pts = t.sorted.data();
  const uint32_t* const cell_start = t.start.data();
  for (int64_t l = 0; l < L; ++l) {
    const float* q = &line.data[(size_t)l * 3];
    const float qx = q[0], qy = q[1];
    if (!std::isfinite(qx) || !std::isfinite(qy)) continue;  // empty window, as the reference's NaN test
    const float al = fa(qx, qy), bl = fb(qx, qy);
    const Shape sh = shape_at(line, l, aspect);
    const float ta = ux * sh.tx + uy * sh.ty, tb = ux * sh.ty - uy * sh.tx;  // the tangent in the frame
    const int c0 = col_of(al - m), c1 = col_of(al + m), r0 = row_of(bl - m), r1 = row_of(bl + m), qc = col_of(al);
    // A box [ea0, ea1] x [eb0, eb1] relative to the line point: every key in it is at least its
    // distance^2 (box2) + (aspect^2 - 1) x the least |along| over it (its corners' projections on
    // the tangent; 0 when they straddle the line point), each gap shrunk by the slack.
    auto bound = [&](float ea0, float ea1, float eb0, float eb1, float* box2) {
      const float gx = std::max(0.f, std::max(ea0, -ea1) - slack), gy = std::max(0.f, std::max(eb0, -eb1) - slack);
      *box2 = gx * gx + gy * gy;
      if (sh.w == 0.f) return *box2;
      const float p0 = ta * ea0 + tb * eb0, p1 = ta * ea1 + tb * eb0, p2 = ta * ea0 + tb * eb1, p3 = ta * ea1 + tb * eb1;
      const float lo = std::min(std::min(p0, p1), std::min(p2, p3)), hi = std::max(std::max(p0, p1), std::max(p2, p3));
      const float amin = std::max(0.f, (lo > 0.f ? lo : hi < 0.f ? -hi : 0.f) - slack);
      return *box2 + sh.w * (amin * amin);
    };
    // The K smallest (rank, id) keys so far, buffered; rank_bar, once cut, the K-th's rank, which a
    // point (ties may still enter: their id decides) and a cell's bound must not exceed.
    uint64_t* cand = t.cand.data();
    size_t n = 0;
    float rank_bar = std::numeric_limits<float>::infinity();
    auto cut = [&] {
      select_k(cand, n, K);
      n = K;
      rank_bar = key_dist2(cand[K - 1]);
    };
    auto scan = [&](size_t slot) {
      // Branch-free: whether a point passes is a coin flip for the branch predictor, so every
      // key is written and the count advances over those that pass.
      for (uint32_t i = cell_start[slot], e = cell_start[slot + 1]; i < e; ++i) {
        const CellPoint& p = pts[i];
        const float d2 = dist2(p.x, p.y, qx, qy);
        const float rk = rank_dist2(d2, p.x - qx, p.y - qy, sh);
        cand[n] = rank_key(rk, p.id);
        n += (d2 <= r2) & (rk <= rank_bar);
      }
      if (n >= cap) cut();
    };
    // First the line point's column and its two neighbours, cell by cell in the order of their
    // bounds (the window's best candidates first, so the first cut sets a tight bar and the rest
    // are skipped by it).
    const float eb_lo = b0 + (float)r0 * cell_b - bl, eb_hi = b0 + (float)(r1 + 1) * cell_b - bl;
    t.cells.clear();
    for (int col = std::max(c0, qc - 1); col <= std::min(c1, qc + 1); ++col) {
      const float ea0 = a0 + (float)col * cell_a - al, ea1 = ea0 + cell_a;
      for (int row = r0; row <= r1; ++row) {
        const size_t slot = (size_t)col * (size_t)ny + (size_t)row;
        if (t.start[slot] == t.start[slot + 1]) continue;
        const float eb0 = b0 + (float)row * cell_b - bl;
        float box2;
        const float bd = bound(ea0, ea1, eb0, eb0 + cell_b, &box2);
        if (box2 > r2) continue;
        t.cells.push_back(rank_key(bd, (uint32_t)slot));
      }
    }
    sort_keys(t.cells.data(), t.cells.size());
    for (uint64_t cell : t.cells) {
      if (key_dist2(cell) > rank_bar) break;  // this and every later cell: no key below the bar
      scan((uint32_t)cell);
    }
    // Then the columns outward on each side. A column's bound (its box over the window's rows,
    // which hold the line point's row) only grows outward: the first column beyond the bar ends
    // that side.
    for (int dir : {1, -1})
      for (int col = qc + 2 * dir; col >= c0 && col <= c1; col += dir) {
        const float ea0 = a0 + (float)col * cell_a - al, ea1 = ea0 + cell_a;
        float box2;
        if (bound(ea0, ea1, eb_lo, eb_hi, &box2) > rank_bar || box2 > r2) break;
        for (int row = r0; row <= r1; ++row) {
          const size_t slot = (size_t)col * (size_t)ny + (size_t)row;
          if (t.start[slot] == t.start[slot + 1]) continue;
          const float eb0 = b0 + (float)row * cell_b - bl;
          if (bound(ea0, ea1, eb0, eb0 + cell_b, &box2) > rank_bar || box2 > r2) continue;
          scan(slot);
        }
      }
    if (spread) {
      // Every point of the window, sorted; the spread ranks, in place (rank(i) >= i).
      std::sort(cand, cand + n);
      if (n > K) {
        for (size_t i = 0; i < K; ++i) cand[i] = cand[spread_rank(i, n, K)];
        n = K;
      }
    } else {
      if (n > K) cut();
      for (size_t j = 0; j < n; ++j) {  // the rows' reads (scattered) start while the keys sort
        const uint32_t id = (uint32_t)cand[j];
        __builtin_prefetch(c.x + id), __builtin_prefetch(c.y + id), __builtin_prefetch(c.z + id);
        if (c.intensity) __builtin_prefetch(c.intensity + id);
      }
      sort_keys(cand, n);
    }
    write_group(c, q, cand, n, k, &g.local.data[(size_t)l * K * 4], &g.count.data[(size_t)l]);
  }
  return g;
}

}  // namespace sl
