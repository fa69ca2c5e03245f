#include "geometry/intensity.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "graph/error.h"

namespace sl {
namespace {

// The intensities normalize_intensity and scale_intensity change: column 3 of context's rows and
// of local's rows outside empty groups. Checks the shapes first.
struct Channels {
  float* context = nullptr;
  int64_t rows = 0, stride = 0;  // context rows and floats per row
  std::vector<float*> local;     // each changed local intensity
};

Channels channels(Tensor* context, Tensor* local, const Tensor* local_count, const char* who) {
  const std::string w = who;
  if (!context) throw Error(w + ": the sample has no \"context\"");
  const auto& sh = context->shape;
  if (sh.size() != 2 || sh[0] < 1 || sh[1] < 4)
    throw Error(w + ": \"context\" should be [P >= 1, C >= 4] (x y z intensity), got " + context->shape_str());
  Channels c;
  c.context = context->data.data() + 3, c.rows = sh[0], c.stride = sh[1];
  if (!local) return c;
  const auto& lh = local->shape;
  if (lh.size() != 3 || lh[2] != 4) throw Error(w + ": \"local\" should be [L, K, 4], got " + local->shape_str());
  if (local_count && (local_count->shape.size() != 1 || local_count->shape[0] != lh[0]))
    throw Error(w + ": \"local_count\" should be [L] with the L = " + std::to_string(lh[0]) + " of local, got " +
                local_count->shape_str());
  for (int64_t l = 0; l < lh[0]; ++l) {
    if (local_count && local_count->data[(size_t)l] <= 0) continue;  // K rows of zeros: no point to rescale
    for (int64_t k = 0; k < lh[1]; ++k) c.local.push_back(local->data.data() + (l * lh[1] + k) * 4 + 3);
  }
  return c;
}

std::vector<float> context_values(const Channels& c) {
  std::vector<float> v((size_t)c.rows);
  for (int64_t i = 0; i < c.rows; ++i) {
    v[(size_t)i] = c.context[i * c.stride];
    if (!std::isfinite(v[(size_t)i]))
      throw Error("normalize_intensity: context point " + std::to_string(i) + " has intensity " + std::to_string(v[(size_t)i]));
  }
  return v;
}

// Divides every changed intensity by `by` (a positive number), or leaves them when there is none.
void divide(Channels& c, float by) {
  if (!(by > 0)) return;
  for (int64_t i = 0; i < c.rows; ++i) c.context[i * c.stride] /= by;
  for (float* v : c.local) *v /= by;
}

// The quantile method's divisor: the quantile, or the maximum when the quantile is <= 0.
float divisor(float quantile_value, float max) { return quantile_value > 0 ? quantile_value : max; }

size_t quantile_index(size_t n, double quantile) { return (size_t)std::floor(quantile * (double)(n - 1)); }

float mid_rank(size_t less, size_t equal, size_t n) { return (float)(((double)less + 0.5 * (double)equal) / (double)n); }

}  // namespace

IntensityNorm parse_intensity_norm(const std::string& name, const std::string& where) {
  if (name == "quantile") return IntensityNorm::kQuantile;
  if (name == "rank") return IntensityNorm::kRank;
  fail(where, "unknown intensity normalisation \"" + name + "\" (quantile or rank)");
}

void normalize_intensity(Tensor* context, Tensor* local, const Tensor* local_count, IntensityNorm norm, double quantile) {
  if (!(quantile >= 0 && quantile <= 1)) throw Error("normalize_intensity: quantile should be in [0, 1], got " + std::to_string(quantile));
  Channels c = channels(context, local, local_count, "normalize_intensity");
  std::vector<float> v = context_values(c);
  if (norm == IntensityNorm::kQuantile) {
    const size_t at = quantile_index(v.size(), quantile);
    const float max = *std::max_element(v.begin(), v.end());
    std::nth_element(v.begin(), v.begin() + (ptrdiff_t)at, v.end());
    divide(c, divisor(v[at], max));
    return;
  }
  std::sort(v.begin(), v.end());
  auto rank = [&](float x) {
    const auto lo = std::lower_bound(v.begin(), v.end(), x), hi = std::upper_bound(lo, v.end(), x);
    return mid_rank((size_t)(lo - v.begin()), (size_t)(hi - lo), v.size());
  };
  for (float* p : c.local) *p = rank(*p);  // against the context's values, before they change
  for (int64_t i = 0; i < c.rows; ++i) c.context[i * c.stride] = rank(c.context[i * c.stride]);
}

void normalize_intensity_reference(Tensor* context, Tensor* local, const Tensor* local_count, IntensityNorm norm,
                                   double quantile) {
  if (!(quantile >= 0 && quantile <= 1)) throw Error("normalize_intensity: quantile should be in [0, 1], got " + std::to_string(quantile));
  Channels c = channels(context, local, local_count, "normalize_intensity");
  const std::vector<float> v = context_values(c);
  if (norm == IntensityNorm::kQuantile) {
    std::vector<float> sorted = v;
    std::sort(sorted.begin(), sorted.end());
    divide(c, divisor(sorted[quantile_index(v.size(), quantile)], sorted.back()));
    return;
  }
  auto rank = [&](float x) {
    size_t less = 0, equal = 0;
    for (float y : v) less += y < x, equal += y == x;
    return mid_rank(less, equal, v.size());
  };
  for (float* p : c.local) *p = rank(*p);
  for (int64_t i = 0; i < c.rows; ++i) c.context[i * c.stride] = rank(v[(size_t)i]);
}

void scale_intensity(Tensor* context, Tensor* local, const Tensor* local_count, float scale, float gamma) {
  Channels c = channels(context, local, local_count, "scale_intensity");
  auto map = [&](float x) { return std::copysign(scale * (gamma == 1.f ? std::fabs(x) : std::pow(std::fabs(x), gamma)), x); };
  for (int64_t i = 0; i < c.rows; ++i) c.context[i * c.stride] = map(c.context[i * c.stride]);
  for (float* p : c.local) *p = map(*p);
}

}  // namespace sl
