// Mirror images of a sample in its line's frame (x along the line, y across it, z up: what
// center with rotate makes), the training-time twin of model.views (kernels/model_views.h):
//
//   across: y -> -y (the road seen from the line's other side)
//   reverse: x -> -x and the line's points in reverse order, so that the line still runs
//            towards +x (the line drawn in the other direction)
//
// Both are isometries of the frame, so a sample's true offsets map to the mirrored sample's
// true offsets: a refiner that should not care which way a line was drawn, or on which side of
// it the road lies, sees each sample in all four ways over the epochs.
#pragma once
#include "graph/message.h"

namespace sl {

// In place, on the keys a sample has of: "context" [P, C] (x y first), the lines "line",
// "true_line", "noisy_line" [L, 3], "target_offset" [L, 3], the groups "local" [L, K, 4] and
// "local_count" [L] (both ordered like noisy_line). "frame" is left as it was (the stage that
// calls this is dropped from evaluation and inference, which map back to the world with it).
// Throws sl::Error when a tensor's shape does not fit.
void mirror_sample(Sample& s, bool across, bool reverse);

}  // namespace sl
