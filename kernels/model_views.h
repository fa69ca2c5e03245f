// Inference over several views of a sample: the prediction averaged over the sample and its
// mirror images in the line's frame (x along the line, y across it, z up: what `center` with
// rotate makes). A line refiner trained on roads in both directions and on both sides sees the
// same road in each view, so the views' predictions are estimates of one offset with partly
// independent errors; their mean is what evaluation and `infer` report (model.views).
//
//   view 0: as given
//   view 1: mirrored across the line: y -> -y (context, noisy line, grouped points); the
//           prediction's y negated back
//   view 2: mirrored along the line: x -> -x and the L line points (and their groups) in
//           reverse order, so that the line still runs towards +x; the prediction reversed and
//           its x negated back
//   view 3: both: a half turn about z with the points reversed -- the line drawn the other way
//
// views = 2 averages views 0-1, views = 4 views 0-3 (in that order, in double).
#pragma once
#include "kernels/model.h"

namespace sl {

// pred [B,L,3] (host) = the mean over `views` (1, 2 or 4) of the model's prediction on each view of
// context [B,P,C], noisy_line [B,L,W] (W = the model's line_channels: x y z, then any one-hot of the
// line's category, which no view changes) and local [B,L,K,4] (null without a local branch; K the
// model's local_k); all host memory, as LineRefiner::forward takes them on the CPU backend.
// views = 1 is exactly model.forward. Throws sl::Error for another views value.
// spread (nullable, [B,L,3] host): per line point and axis of the sample frame (x along the line,
// y across it, z up), the standard deviation of the views' predictions about their mean (divisor
// views - 1; zero with views = 1): how much the mirror images of one sample disagree, the raw
// material of a confidence (refine/confidence.h calibrates it against true errors).
// sigma (nullable, [B,L,3] host; the model must have a variance head): per line point and axis of
// the sample frame, the square root of the views' mean predicted variance (exp of the head's
// log variance, mapped back to view 0's order): what the model itself expects its error to be.
void forward_views(LineRefiner& model, int views, const float* context, const float* noisy_line, int B, int P, int L,
                   float* pred, const float* local = nullptr, float* spread = nullptr, float* sigma = nullptr);

}  // namespace sl
