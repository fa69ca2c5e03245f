// The line error in metres: how far the points of a line are from the true line. The one
// measure of the evaluation (train/metrics.h) and of the run report's pictures
// (report/eval_examples.h), kept low so that both can use it.
#pragma once
#include <cstdint>

namespace sl {

// Distance of point p (3 floats) to the polyline `line` [n,3] (segments), in metres.
double point_to_polyline(const float* p, const float* line, int64_t n);

// The point of the polyline `line` [n,3] nearest to p (3 floats), into out[3] (double): the
// segment point point_to_polyline measures to (the first segment of the least distance).
void nearest_on_polyline(const float* p, const float* line, int64_t n, double out[3]);

// Mean over the L points of `pts` [L,3] of their distance to `truth` [L,3] (as a polyline).
double mean_line_error(const float* pts, const float* truth, int64_t L);

}  // namespace sl
