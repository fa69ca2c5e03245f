#include "geometry/group.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <utility>

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

struct Offset {
  int dx, dy;  // a cell relative to the line point's
};

// A thread's buffers for group_points, kept between calls.
struct Scratch {
  std::vector<uint32_t> start, fill, sid;
  std::vector<int32_t> cell_of;
  std::vector<float> sx, sy;
  std::vector<Offset> order;  // cells within `reach` of a line point's, near ones first
  int reach = -1;
  std::vector<uint64_t> cand;
  std::vector<float> gx, gy;
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

  // The grid covers the finite line points' box widened by the radius and a margin: only points
  // inside can be within the radius of a line point. The margin (1e-5 of the coordinates'
  // magnitude, ~80 float steps) covers rounding, so that every point the float test accepts lies
  // in a visited cell; the test itself is exact and decides.
  float bx0 = std::numeric_limits<float>::infinity(), by0 = bx0, bx1 = -bx0, by1 = -bx0;
  for (int64_t l = 0; l < L; ++l) {
    const float qx = line.data[(size_t)l * 3], qy = line.data[(size_t)l * 3 + 1];
    if (!std::isfinite(qx) || !std::isfinite(qy)) continue;
    bx0 = std::min(bx0, qx), bx1 = std::max(bx1, qx), by0 = std::min(by0, qy), by1 = std::max(by1, qy);
  }
  const size_t n_crop = crop.size(), n_cloud = cloud.size();
  for (uint32_t id : crop)
    if (id >= n_cloud) bad_id(who, id, n_cloud);
  if (n_crop == 0 || !(bx0 <= bx1)) return g;  // nothing to group, or no finite line point
  auto margin = [&](float a) { return radius + 1e-5f * (std::fabs(a) + 2 * radius); };
  const float x0 = bx0 - margin(bx0), x1 = bx1 + margin(bx1), y0 = by0 - margin(by0), y1 = by1 + margin(by1);
  // Cell: half the radius (a window spans about 5 x 5 cells, 2.0x the window's area against
  // 2.9x with 3 x 3 cells of the radius, and a dense window's K nearest are found in its few
  // central cells), a quarter where such cells would hold more than 32 points on average (a
  // dense map: the K nearest fill a small part of a half-radius cell, and an ellipse a narrow
  // strip; measured on 5 cm voxel maps, 9,759 crop points a sample, K 64: 1.6x faster at aspect 1
  // and 1.25x at aspect 8; an eighth was slower again, and on sparse sweeps a quarter was slower);
  // enlarged when a very long line's box would need too many (memory bounded).
  constexpr double kMaxCells = 1 << 20;
  const double box_area = (double)(x1 - x0) * (double)(y1 - y0);
  float cell = radius / 2;
  if ((double)n_crop * (double)cell * (double)cell > 32.0 * box_area) cell = radius / 4;
  const double cells = std::ceil((x1 - x0) / cell) * std::ceil((y1 - y0) / cell);
  if (cells > kMaxCells) cell = (float)(cell * std::sqrt(cells / kMaxCells) * 1.01);
  const float inv = 1.f / cell;
  const int nx = (int)((x1 - x0) * inv) + 1, ny = (int)((y1 - y0) * inv) + 1;
  // Truncation of a non-negative value is floor; below x0 (a query's low edge) it clamps to 0.
  auto cx_of = [&](float x) { return std::clamp((int)((x - x0) * inv), 0, nx - 1); };
  auto cy_of = [&](float y) { return std::clamp((int)((y - y0) * inv), 0, ny - 1); };

  // Counting sort of the crop by cell (row-major): coordinates and ids cell by cell. The
  // buffers are the thread's own, reused across samples (no allocation per sample).
  thread_local Scratch t;
  t.start.assign((size_t)nx * (size_t)ny + 1, 0);
  t.cell_of.resize(n_crop), t.gx.resize(n_crop), t.gy.resize(n_crop);
  for (size_t j = 0; j < n_crop; ++j) {  // the one pass that reads the cloud's x and y (scattered)
    const uint32_t id = crop[j];
    const float x = c.x[id], y = c.y[id];
    t.gx[j] = x, t.gy[j] = y;
    if (!(x >= x0 && x <= x1 && y >= y0 && y <= y1)) {  // outside every window (or not finite)
      t.cell_of[j] = -1;
      continue;
    }
    const int s = cy_of(y) * nx + cx_of(x);
    t.cell_of[j] = s;
    ++t.start[(size_t)s + 1];
  }
  uint32_t most = 0;  // the fullest cell
  for (size_t s = 1; s < t.start.size(); ++s) most = std::max(most, t.start[s]), t.start[s] += t.start[s - 1];
  const size_t n_in = t.start.back();
  t.sx.resize(n_in), t.sy.resize(n_in), t.sid.resize(n_in);
  t.fill.assign(t.start.begin(), t.start.end() - 1);
  for (size_t j = 0; j < n_crop; ++j) {
    if (t.cell_of[j] < 0) continue;
    const uint32_t at = t.fill[(size_t)t.cell_of[j]]++;
    t.sx[at] = t.gx[j], t.sy[at] = t.gy[j], t.sid[at] = crop[j];
  }

  // The cells around a line point's own, in a fixed order: by the least distance any point of
  // the cell can have whatever the line point's place in its cell (the 3 x 3 block first, then
  // ring by ring), so the K nearest are usually kept before the outer cells, which are then
  // skipped by their bound -- without sorting cells per line point. Made for the reach a line
  // point needs (its cx0..cx1, cy0..cy1 around its own cell), kept while that does not grow.
  auto order_for = [&](int reach) {
    if (reach <= t.reach) return;
    t.reach = reach;
    t.order.clear();
    for (int dy = -reach; dy <= reach; ++dy)
      for (int dx = -reach; dx <= reach; ++dx) t.order.push_back({dx, dy});
    auto ring = [](const Offset& o) {
      const int ax = std::max(0, std::abs(o.dx) - 1), ay = std::max(0, std::abs(o.dy) - 1);
      return ax * ax + ay * ay;
    };
    std::stable_sort(t.order.begin(), t.order.end(), [&](const Offset& a, const Offset& b) { return ring(a) < ring(b); });
  };

  const size_t K = (size_t)k;
  const bool spread = select == GroupSelect::kSpread;
  // nearest: below 4K, plus a cell's points; spread: every point of a window (at most n_in)
  // plus the last cell's (written before the count decides).
  const size_t need = spread ? n_in + most : 4 * K + most;
  if (t.cand.size() < need) t.cand.resize(need);
  for (int64_t l = 0; l < L; ++l) {
    const float* q = &line.data[(size_t)l * 3];
    const float qx = q[0], qy = q[1];
    if (!std::isfinite(qx) || !std::isfinite(qy)) continue;  // empty window, as the reference's NaN test
    const float mx = margin(qx), my = margin(qy);
    const int cx0 = cx_of(qx - mx), cx1 = cx_of(qx + mx), cy0 = cy_of(qy - my), cy1 = cy_of(qy + my);
    const int qcx = cx_of(qx), qcy = cy_of(qy);
    order_for(std::max(std::max(qcx - cx0, cx1 - qcx), std::max(qcy - cy0, cy1 - qcy)));
    // A cell's bound: its box's distance, shrunk by a slack (1e-5 of the coordinates'
    // magnitude) that covers the rounding of a point's cell and of its distance, so the bound
    // never exceeds a distance the exact test computes.
    const float slack = 1e-5f * (std::fabs(x0) + std::fabs(y0) + std::fabs(qx) + std::fabs(qy) + 4 * radius);
    // The K smallest (distance, id) keys, buffered: candidates are appended (up to 4K), then
    // cut to the K smallest, whose largest distance becomes the bar a point must not exceed
    // (ties with it may still enter: their id decides) and a cell's bound must reach. A heap
    // spent a fifth of the time re-ordering on every entry.
    // With an aspect > 1 the keys rank by lateral^2 + aspect^2 along^2 (>= the squared distance,
    // so a cell's bound still bounds every key in it): rank_bar is the K-th key's, bar the
    // smaller of it and the window's r2 that cells are skipped by.
    const size_t cap = spread ? std::numeric_limits<size_t>::max() : 4 * K;  // spread: no cut
    const Shape sh = shape_at(line, l, aspect);
    uint64_t* cand = t.cand.data();
    size_t n = 0;
    float bar = r2, rank_bar = std::numeric_limits<float>::infinity();
    auto cut = [&] {
      std::nth_element(cand, cand + (K - 1), cand + n);
      n = K;
      rank_bar = key_dist2(cand[K - 1]);
      bar = std::min(r2, rank_bar);
    };
    for (const Offset& o : t.order) {
      const int cx = qcx + o.dx, cy = qcy + o.dy;
      if (cx < cx0 || cx > cx1 || cy < cy0 || cy > cy1) continue;
      const size_t slot = (size_t)cy * (size_t)nx + (size_t)cx;
      const uint32_t a = t.start[slot], e = t.start[slot + 1];
      if (a == e) continue;
      const float xl = x0 + (float)cx * cell, yl = y0 + (float)cy * cell;
      const float bx = std::max(0.f, std::max(xl - qx, qx - (xl + cell)) - slack);
      const float by = std::max(0.f, std::max(yl - qy, qy - (yl + cell)) - slack);
      const float box2 = bx * bx + by * by;
      if (box2 > bar) continue;
      if (sh.w > 0.f) {
        // The ellipse's bound: every key in the cell is >= box2 + w amin^2, amin the least
        // |along| over the cell (its corners' projections on the tangent; 0 when they straddle
        // the line point), shrunk by the same slack. Cells along the line, near in distance but
        // far in rank, are skipped: at aspect 8 most of a window's cells.
        const float ex0 = xl - qx, ex1 = ex0 + cell, ey0 = yl - qy, ey1 = ey0 + cell;
        const float p0 = sh.tx * ex0 + sh.ty * ey0, p1 = sh.tx * ex1 + sh.ty * ey0;
        const float p2 = sh.tx * ex0 + sh.ty * ey1, p3 = sh.tx * ex1 + sh.ty * ey1;
        const float lo = std::min(std::min(p0, p1), std::min(p2, p3)), hi = std::max(std::max(p0, p1), std::max(p2, p3));
        const float amin = std::max(0.f, (lo > 0.f ? lo : hi < 0.f ? -hi : 0.f) - slack);
        if (box2 + sh.w * (amin * amin) > rank_bar) continue;
      }
      // Branch-free: whether a point passes is a coin flip for the branch predictor, so every
      // key is written and the count advances over those that pass.
      for (uint32_t i = a; i < e; ++i) {
        const float d2 = dist2(t.sx[i], t.sy[i], qx, qy);
        const float rk = rank_dist2(d2, t.sx[i] - qx, t.sy[i] - qy, sh);
        cand[n] = rank_key(rk, t.sid[i]);
        n += (d2 <= r2) & (rk <= rank_bar);
      }
      if (n >= cap) cut();
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
      std::sort(cand, cand + n);
    }
    write_group(c, q, cand, n, k, &g.local.data[(size_t)l * K * 4], &g.count.data[(size_t)l]);
  }
  return g;
}

}  // namespace sl
