// A sample's intensity channel made independent of the sensor's intensity scale, and varied.
//
// Intensities are not comparable between sensors: the generator writes paint at ~0.5 of full
// scale, one real sensor reads ~0.2, others apply their own curve. The model reads intensity in
// column 3 of "context" [P, C >= 4] and of "local" [L, K, 4] (x y z intensity rows).
//
// normalize_intensity (the normalize_intensity stage: run in training and at inference alike)
// rescales both from the context's own intensities, per sample:
//   quantile: every intensity divided by the q-quantile of the context's intensities (the order
//             statistic at index floor(q (P - 1)) of the sorted values; the maximum when that one
//             is <= 0; left as it is when the maximum is <= 0 too). A positive factor on every
//             intensity cancels, up to float rounding (exactly, for a power of two).
//   rank:     every intensity replaced by its mid-rank among the context's intensities,
//             (#less + #equal / 2) / P, in (0, 1). Any increasing map of the intensities (a scale,
//             a gamma) leaves it unchanged where the map keeps the floats' order and ties.
// The groups' points are ranked and divided against the context's values (they are crop points
// too). A group of local_count 0 (no point in its window: K rows of zeros) is left as it is.
//
// scale_intensity (the randomize_intensity stage: an augmentation, training only) maps every
// intensity v to scale * |v|^gamma (v's sign kept), the same map for context and local.
#pragma once
#include <string>

#include "graph/message.h"

namespace sl {

enum class IntensityNorm { kQuantile, kRank };

// "quantile" / "rank"; throws sl::Error naming `where` for another name.
IntensityNorm parse_intensity_norm(const std::string& name, const std::string& where);

// In place (see the top of this file); `local` and `local_count` may be null. quantile in [0, 1].
// Throws sl::Error on a context that is not [P >= 1, C >= 4], a local that is not [L, K, 4], or a
// local_count that is not [L].
void normalize_intensity(Tensor* context, Tensor* local, const Tensor* local_count, IntensityNorm norm, double quantile);

// The same by the plainest means (a full sort for the quantile, counting every pair for the
// ranks): what normalize_intensity is tested against.
void normalize_intensity_reference(Tensor* context, Tensor* local, const Tensor* local_count, IntensityNorm norm,
                                   double quantile);

// In place: v -> scale * |v|^gamma with v's sign, on column 3 of context and of local (groups of
// local_count 0 left as they are). Same shape checks as above.
void scale_intensity(Tensor* context, Tensor* local, const Tensor* local_count, float scale, float gamma);

}  // namespace sl
