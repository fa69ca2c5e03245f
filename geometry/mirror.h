// Mirror images of a sample in its line's frame (x along the line, y across it, z up: what
// center with rotate makes), the training-time twin of model.views (kernels/model_views.h):
//
//   across:  y -> -y: the road seen from the line's other side
//   reverse: the line drawn the other way: a half turn about z (x -> -x, y -> -y) with the
//            line's points in reverse order, so that the line still runs towards +x
//   both:    x -> -x with the points reversed (the mirror image along the line)
//
// Each is an isometry of the frame applied to every geometric key alike, so a sample's true
// offsets map to the image's true offsets. The four images are the views that model.views = 4
// averages. A refiner that should not care which way a line was drawn, or on which side of it
// the road lies, sees each sample in all four ways over the epochs.
#pragma once
#include "graph/message.h"

namespace sl {

// In place, on the keys a sample has of: "context" [P, C] (x y first), the lines "line",
// "true_line", "noisy_line" [N, 3], "target_offset" [L, 3], the groups "local" [L, K, 4] and
// "local_count" [L] (the last three ordered like noisy_line, whose L they must have). "frame"
// is left as it was: the stage that calls this is dropped from evaluation and inference, which
// map back to the world with it; a training loop that batches "frame" must not use it for
// mirrored samples. Any other tensor is refused (this would not know how to mirror it). Every
// shape is checked before anything changes: a sample is either wholly mirrored or untouched.
// Throws sl::Error naming the key.
void mirror_sample(Sample& s, bool across, bool reverse);

}  // namespace sl
