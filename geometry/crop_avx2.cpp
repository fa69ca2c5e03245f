// The crop's per-point kernel on 8 AVX2 lanes. This file alone is compiled with -mavx2
// (CMakeLists.txt, which then defines SL_CROP_AVX2 for crop.cpp); crop.cpp calls it only on a
// CPU that reports AVX2. Built without -mavx2, it is empty and the kernel is not offered.
#include "geometry/crop_kernel.h"

#if defined(__x86_64__) && defined(__AVX2__)
#include <immintrin.h>

namespace sl::crop_detail {
namespace {
struct Avx2 {
  static constexpr uint32_t W = 8;
  using F = __m256;
  static F set1(float v) { return _mm256_set1_ps(v); }
  static F gather(const float* base, const uint32_t* ids) {
    return _mm256_i32gather_ps(base, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ids)), 4);
  }
  static F add(F a, F b) { return _mm256_add_ps(a, b); }
  static F sub(F a, F b) { return _mm256_sub_ps(a, b); }
  static F mul(F a, F b) { return _mm256_mul_ps(a, b); }
  static F lt(F a, F b) { return _mm256_cmp_ps(a, b, _CMP_LT_OQ); }
  static F le(F a, F b) { return _mm256_cmp_ps(a, b, _CMP_LE_OQ); }
  static F and_(F a, F b) { return _mm256_and_ps(a, b); }
  static F select(F m, F a, F b) { return _mm256_blendv_ps(b, a, m); }
  static unsigned mask_bits(F m) { return (unsigned)_mm256_movemask_ps(m); }
};
}  // namespace

uint32_t keep_cell_avx2(const float* xs, const float* ys, const float* zs, const uint32_t* ids, uint32_t a,
                        uint32_t b, const CellTest& t, uint32_t* out) {
  return keep_cell_simd<Avx2>(xs, ys, zs, ids, a, b, t, out);
}

}  // namespace sl::crop_detail
#endif
