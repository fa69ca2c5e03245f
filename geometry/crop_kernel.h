// Internal to the crop (geometry/crop*.cpp): the per-point test of crop_polyline, built
// once per instruction set and chosen at run time, so one binary is fast on any x86-64 machine
// and never runs an instruction the CPU lacks.
//
// Every build makes the same float decisions as the scalar reference (dist2_to below): the
// same operations in the same order, no FMA contraction (these files are compiled with
// -ffp-contract=off), and the clamp as compare-and-select. The crop tests check each kernel
// this machine can run against crop_polyline_reference, id for id.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace sl::crop_detail {

// One segment of the polyline, with what the distance test needs precomputed.
struct Seg {
  float ax, ay, az, dx, dy, dz;  // start and direction (end - start)
  float inv_len2;                // 1 / |d_xy|^2, or 0 for a zero-length (xy) segment
};

// Squared xy distance from (x, y) to the segment, and the z of the closest point: the scalar
// arithmetic every kernel reproduces.
inline float dist2_to(const Seg& s, float x, float y, float* z_at) {
  const float px = x - s.ax, py = y - s.ay;
  float t = (px * s.dx + py * s.dy) * s.inv_len2;
  t = std::clamp(t, 0.f, 1.f);
  const float ex = px - t * s.dx, ey = py - t * s.dy;
  *z_at = s.az + t * s.dz;
  return ex * ex + ey * ey;
}

// What one cell's points are tested against: its candidate segments (ascending index) and the
// radius / z band. Without a z band a point is kept when any segment is within the radius, in
// whatever order they are tried; with one, the nearest segment (lowest index on ties) gives
// the reference z, and the segments are tried in ascending order.
struct CellTest {
  const Seg* segs = nullptr;
  size_t nsegs = 0;
  size_t first = 0;  // without a z band the segments are tried from this one on (cyclically)
  float r2 = 0;
  bool z_band = false;
  float z_min = 0, z_max = 0;
};

// The id array a kernel reads is padded with kPad zeros: up to kPad ids past the last one may
// be loaded (their points, point 0, are read and ignored).
constexpr size_t kPad = 16;

// Writes ids[j] for every j in [a, b) whose point (x[ids[j]], y[ids[j]], z[ids[j]]) is kept, in
// order, to out (room for b - a ids) and returns how many it wrote. x, y, z are the cloud's
// columns (z is read only with a z band); ids are below 2^31 (the vector kernels load them as
// signed 32-bit lanes; crop_polyline uses the scalar kernel for larger clouds).
//
// No kernel calls a function that is not its own: crop_avx2.cpp is compiled with -mavx2, and
// an inline library function instantiated there (a vector's push_back) could be the copy the
// linker keeps for the whole program, which a CPU without AVX would then fault on.
using KeepCellFn = uint32_t (*)(const float* x, const float* y, const float* z, const uint32_t* ids, uint32_t a,
                                uint32_t b, const CellTest& t, uint32_t* out);

uint32_t keep_cell_scalar(const float* xs, const float* ys, const float* zs, const uint32_t* ids, uint32_t a, uint32_t b,
                      const CellTest& t, uint32_t* out);
#if defined(__x86_64__)
uint32_t keep_cell_sse2(const float* xs, const float* ys, const float* zs, const uint32_t* ids, uint32_t a,
                        uint32_t b, const CellTest& t, uint32_t* out);  // crop.cpp (x86-64 baseline)
#if defined(SL_CROP_AVX2)
uint32_t keep_cell_avx2(const float* xs, const float* ys, const float* zs, const uint32_t* ids, uint32_t a,
                        uint32_t b, const CellTest& t, uint32_t* out);  // crop_avx2.cpp (-mavx2)
#endif
#endif

// The vector kernel, written once over a lane type V (crop.cpp: 4 SSE2 lanes, crop_avx2.cpp: 8
// AVX2 lanes). V provides: W, F, set1, gather (base[ids[0..W)]), add, sub, mul, lt (a < b),
// le (a <= b), and_, select(mask, a, b) (a where mask), mask_bits (one bit per lane).
template <class V>
inline uint32_t keep_cell_simd(const float* xs, const float* ys, const float* zs, const uint32_t* ids, uint32_t a,
                               uint32_t b, const CellTest& t, uint32_t* out) {  // xs, ys, zs: the cloud's x, y, z
  using F = typename V::F;
  uint32_t* const out0 = out;
  const F r2 = V::set1(t.r2), zero = V::set1(0.f), one = V::set1(1.f);
  for (uint32_t j = a; j < b; j += V::W) {
    const uint32_t n = b - j < V::W ? b - j : V::W;
    const unsigned valid = (1u << n) - 1;
    const F x = V::gather(xs, ids + j), y = V::gather(ys, ids + j);
    unsigned kept = 0;
    // d2 (and the clamped t) of the block's points to segment s, exactly as dist2_to.
    auto dist2 = [&](const Seg& s, F* tt_out) {
      const F px = V::sub(x, V::set1(s.ax)), py = V::sub(y, V::set1(s.ay));
      const F sdx = V::set1(s.dx), sdy = V::set1(s.dy);
      F tt = V::mul(V::add(V::mul(px, sdx), V::mul(py, sdy)), V::set1(s.inv_len2));
      tt = V::select(V::lt(tt, zero), zero, tt);
      tt = V::select(V::lt(one, tt), one, tt);
      const F ex = V::sub(px, V::mul(tt, sdx)), ey = V::sub(py, V::mul(tt, sdy));
      *tt_out = tt;
      return V::add(V::mul(ex, ex), V::mul(ey, ey));
    };
    if (!t.z_band) {
      size_t k = t.first;
      for (size_t i = 0; i < t.nsegs; ++i, k = k + 1 == t.nsegs ? 0 : k + 1) {
        F tt;
        kept |= V::mask_bits(V::le(dist2(t.segs[k], &tt), r2));
        if ((kept & valid) == valid) break;  // every point of the block is in
      }
    } else {
      F best = V::set1(__builtin_inff()), best_z = zero;
      for (size_t k = 0; k < t.nsegs; ++k) {
        const Seg& s = t.segs[k];
        F tt;
        const F d2 = dist2(s, &tt);
        const F za = V::add(V::set1(s.az), V::mul(tt, V::set1(s.dz)));
        const F closer = V::lt(d2, best);
        best = V::select(closer, d2, best);
        best_z = V::select(closer, za, best_z);
      }
      const F dz = V::sub(V::gather(zs, ids + j), best_z);
      kept = V::mask_bits(V::and_(V::le(best, r2), V::and_(V::le(V::set1(t.z_min), dz), V::le(dz, V::set1(t.z_max)))));
    }
    for (kept &= valid; kept; kept &= kept - 1) *out++ = ids[j + (uint32_t)__builtin_ctz(kept)];
  }
  return (uint32_t)(out - out0);
}

}  // namespace sl::crop_detail
