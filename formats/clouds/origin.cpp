#include "formats/clouds/origin.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <vector>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "graph/error.h"
#include "graph/parallel.h"
#include "graph/spec.h"

namespace sl {

std::string exact_number(double v) {
  char buf[64];
  // Plain digits for coordinates (5400000, not 5.4e+06); the shortest form elsewhere. Both are
  // the shortest text in their form that reads back to exactly v.
  const double a = std::fabs(v);
  const bool plain = a == 0 || (a >= 1e-5 && a < 1e16);
  auto r = plain ? std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed) : std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

std::string OriginPolicy::describe() const {
  if (automatic) return "auto";
  return "[" + exact_number(fixed[0]) + ", " + exact_number(fixed[1]) + ", " + exact_number(fixed[2]) + "]";
}

void Bounds::add(double x, double y, double z) {
  const double v[3] = {x, y, z};
  for (size_t a = 0; a < 3; ++a)
    if (std::isfinite(v[a])) lo[a] = std::min(lo[a], v[a]), hi[a] = std::max(hi[a], v[a]);
  ++points;
}

void Bounds::merge(const Bounds& b) {
  for (size_t a = 0; a < 3; ++a) lo[a] = std::min(lo[a], b.lo[a]), hi[a] = std::max(hi[a], b.hi[a]);
  points += b.points;
}

Vec3d grid_origin(const Bounds& world) {
  Vec3d o{0, 0, 0};
  if (world.empty()) return o;
  for (int a = 0; a < 3; ++a)
    if (world.has(a)) o[size_t(a)] = std::floor(world.lo[size_t(a)] / kOriginGrid) * kOriginGrid;
  return o;
}

Vec3d resolve_origin(const OriginPolicy& p, const Bounds& world) { return p.automatic ? grid_origin(world) : p.fixed; }

namespace {

// Bounds of the finite values of one column: {lo, hi, any}.
struct Span {
  float lo = std::numeric_limits<float>::infinity(), hi = -std::numeric_limits<float>::infinity();
};

// The plain loop: the reference, and what an infinite value falls back to.
Span column_span_plain(const float* v, size_t n) {
  Span s;
  for (size_t i = 0; i < n; ++i)
    if (std::isfinite(v[i])) s.lo = std::min(s.lo, v[i]), s.hi = std::max(s.hi, v[i]);
  return s;
}

Span column_span(const float* v, size_t n) {
#if defined(__x86_64__)
  // Sixteen at a time in four independent accumulators (one chain would wait on its own latency).
  // MINPS/MAXPS return their second operand when either is NaN, so a NaN value leaves the
  // accumulator as it was; an infinite one would be taken, and sends the column to the plain
  // loop (a file with infinities is the rare case).
  const float inf = std::numeric_limits<float>::infinity();
  const __m128 pinf = _mm_set1_ps(inf), ninf = _mm_set1_ps(-inf);
  __m128 lo[4] = {pinf, pinf, pinf, pinf}, hi[4] = {ninf, ninf, ninf, ninf};
  size_t i = 0;
  for (; i + 16 <= n; i += 16)
    for (int k = 0; k < 4; ++k) {
      const __m128 x = _mm_loadu_ps(v + i + 4 * size_t(k));
      lo[k] = _mm_min_ps(x, lo[k]);
      hi[k] = _mm_max_ps(x, hi[k]);
    }
  const __m128 l = _mm_min_ps(_mm_min_ps(lo[0], lo[1]), _mm_min_ps(lo[2], lo[3]));
  const __m128 h = _mm_max_ps(_mm_max_ps(hi[0], hi[1]), _mm_max_ps(hi[2], hi[3]));
  alignas(16) float lv[4], hv[4];
  _mm_store_ps(lv, l);
  _mm_store_ps(hv, h);
  Span s;
  for (int k = 0; k < 4; ++k) s.lo = std::min(s.lo, lv[k]), s.hi = std::max(s.hi, hv[k]);
  for (; i < n; ++i)
    if (std::isfinite(v[i])) s.lo = std::min(s.lo, v[i]), s.hi = std::max(s.hi, v[i]);
  // An infinity reached an accumulator (a lane that saw only NaN stays at its +-inf start, which
  // the comparison with the plain result's sentinels below tells apart).
  if (s.lo == -inf || s.hi == inf) return column_span_plain(v, n);
  return s;
#else
  return column_span_plain(v, n);
#endif
}

// cols[i] -= o, as float(double(cols[i]) - o) correctly rounded (beyond float's range: +-inf).
void subtract(float* v, size_t n, double o) {
  if (o == 0) return;
  const double fmax = double(std::numeric_limits<float>::max());
  const float of = std::fabs(o) <= fmax ? static_cast<float>(o) : 0.f;
  if (std::fabs(o) <= fmax && static_cast<double>(of) == o) {
    // o is a float: one float subtraction of two exact values is the correctly rounded result.
    size_t i = 0;
#if defined(__x86_64__)
    const __m128 ov = _mm_set1_ps(of);
    for (; i + 8 <= n; i += 8) {
      _mm_storeu_ps(v + i, _mm_sub_ps(_mm_loadu_ps(v + i), ov));
      _mm_storeu_ps(v + i + 4, _mm_sub_ps(_mm_loadu_ps(v + i + 4), ov));
    }
#endif
    for (; i < n; ++i) v[i] -= of;
    return;
  }
  for (size_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(v[i]) - o;
    v[i] = std::fabs(d) <= fmax ? static_cast<float>(d) : d > 0 ? INFINITY : d < 0 ? -INFINITY : NAN;
  }
}

}  // namespace

Bounds float_bounds(const float* x, const float* y, const float* z, size_t n) {
  Bounds b;
  const float* c[3] = {x, y, z};
  // Per part on all threads, then combined: min and max are exact, so any split gives the same.
  std::vector<std::array<Span, 3>> parts(part_count(n));
  parallel_parts(n, [&](size_t lo, size_t hi) {
    for (size_t a = 0; a < 3; ++a) parts[lo / kPartSize][a] = column_span(c[a] + lo, hi - lo);
  });
  for (size_t a = 0; a < 3; ++a) {
    Span s;
    for (const auto& p : parts) s.lo = std::min(s.lo, p[a].lo), s.hi = std::max(s.hi, p[a].hi);
    if (s.lo <= s.hi) b.lo[a] = s.lo, b.hi[a] = s.hi;
  }
  b.points = int64_t(n);
  return b;
}

int64_t localize_float32(PointCloud& cloud, const OriginPolicy& p, DecodeInfo* info, bool drop_nan) {
  if (cloud.columns.size() < 3) fail("localize_float32", "a cloud needs columns x, y, z");
  const size_t n = cloud.size();
  const Bounds b = float_bounds(cloud.columns[0].data(), cloud.columns[1].data(), cloud.columns[2].data(), n);
  if (info) {
    info->float32_extent = 0;
    for (int a = 0; a < 3; ++a)
      if (b.has(a)) info->float32_extent = std::max({info->float32_extent, std::fabs(b.lo[a]), std::fabs(b.hi[a])});
  }
  cloud.origin = resolve_origin(p, b);
  // Points this origin puts beyond float's range (only for spans near 3.4e38 m, or an origin
  // that far from the data) become infinite: dropped like the readers' other non-finite points.
  bool overflow = false;
  for (int a = 0; a < 3; ++a)
    if (b.has(a))
      overflow = overflow || std::max(std::fabs(b.lo[a] - cloud.origin[size_t(a)]), std::fabs(b.hi[a] - cloud.origin[size_t(a)])) >
                                 double(std::numeric_limits<float>::max());
  parallel_parts(n, [&](size_t lo, size_t hi) {
    for (size_t a = 0; a < 3; ++a) subtract(cloud.columns[a].data() + lo, hi - lo, cloud.origin[a]);
  });
  if (!overflow || !drop_nan) return 0;
  size_t w = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!(std::isfinite(cloud.columns[0][i]) && std::isfinite(cloud.columns[1][i]) && std::isfinite(cloud.columns[2][i])))
      continue;
    for (auto& col : cloud.columns) col[w] = col[i];
    ++w;
  }
  for (auto& col : cloud.columns) col.resize(w);
  return int64_t(n - w);
}

OriginPolicy parse_origin(const std::string& text, const std::string& where) {
  if (text == "auto") return OriginPolicy::auto_rule();
  std::string t = text;
  if (t.size() >= 2 && t.front() == '[' && t.back() == ']') t = t.substr(1, t.size() - 2);
  Vec3d o{};
  size_t pos = 0;
  for (int a = 0; a < 3; ++a) {
    while (pos < t.size() && t[pos] == ' ') ++pos;
    const char* b = t.data() + pos;
    const char* e = t.data() + t.size();
    const char* comma = std::find(b, e, ',');
    const char* end = comma;
    while (end > b && end[-1] == ' ') --end;
    if (b < end && *b == '+') ++b;
    auto r = std::from_chars(b, end, o[size_t(a)]);
    if (r.ec != std::errc() || r.ptr != end || !std::isfinite(o[size_t(a)]) || (a < 2) != (comma != e))
      fail(where, "expected \"auto\" or three numbers x,y,z (e.g. 500000,5400000,0), got '" + text + "'");
    pos = size_t(comma - t.data()) + 1;
  }
  return OriginPolicy::at(o);
}

ParamSpec origin_param() {
  return p_floats_or_choice("origin", {"auto"}, 3,
                            "world point subtracted (in double) from every coordinate: [x, y, z], or auto (a LAS "
                            "file's offset when its points lie within 2048 m of it, else the points' minimum "
                            "rounded down to 100 m; see docs/data.md, Coordinates)");
}

OriginPolicy origin_of(const Params& p, const std::string& key) {
  const std::string j = p.json(key);
  if (!j.empty() && j[0] == '"') return parse_origin(p.get_string(key), p.where(key));
  const std::vector<double> v = p.get_floats(key);
  if (v.size() != 3) fail(p.where(key), "expected [x, y, z]");
  return OriginPolicy::at({v[0], v[1], v[2]});
}

std::string coarse_warning(const std::string& path, const DecodeInfo& info) {
  // float32's spacing at the largest coordinate: 2^(exponent - 23).
  int e = 0;
  std::frexp(info.float32_extent, &e);
  const double step = std::ldexp(1.0, e - 24);
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "%s: coordinates stored as float32 reach %.0f m, where float32's step is %.3g m: the file has already "
                "lost that precision (store world coordinates as float64, e.g. PCD F 8, or as LAS)",
                path.c_str(), info.float32_extent, step);
  return buf;
}

}  // namespace sl
