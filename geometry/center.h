// Moving a sample into the line's own frame, and back.
//
// Origin: the arc-length centroid of the true polyline (each segment weighted by its length,
// at its midpoint), not the mean of the vertices: annotators place vertices unevenly (dense in
// curves, sparse on straights), and the vertex mean would drift toward the dense parts. It is
// also what the mean of an equally spaced resampling converges to. A line of zero length uses
// the mean of its vertices.
// Rotation (optional): about z, so that the local x axis points from the first to the last
// point in xy. A closed or vertical line (first == last in xy) falls back to the first segment
// with a nonzero xy length, and to no rotation when there is none.
#pragma once
#include <array>
#include <vector>

#include "graph/message.h"

namespace sl {

struct Frame {
  float origin[3] = {0, 0, 0};
  float cos_yaw = 1, sin_yaw = 0;  // local x axis in world coordinates: (cos_yaw, sin_yaw, 0)

  // world -> local: R^T (p - origin).  local -> world: R q + origin.
  std::array<float, 3> to_local(const std::array<float, 3>& p) const;
  std::array<float, 3> to_world(const std::array<float, 3>& q) const;
  // Offsets (differences of points, e.g. predicted corrections) only rotate.
  std::array<float, 3> offset_to_world(const std::array<float, 3>& v) const;
  std::array<float, 3> offset_to_local(const std::array<float, 3>& v) const;
};

// The frame of a polyline (see the top of this file). Throws sl::Error on an empty line.
Frame line_frame(const std::vector<std::array<float, 3>>& points, bool rotate);

// In place: rows of a [N, C] tensor (C >= 3, x y z first; other columns such as intensity are
// left alone) mapped to local coordinates, resp. back to world; offsets_* only rotate.
void points_to_local(const Frame& f, Tensor* t);
void points_to_world(const Frame& f, Tensor* t);
void offsets_to_world(const Frame& f, Tensor* t);

// The center step of a sample: frame of the true line, applied to the context [P,4] and to
// every line tensor [L,3] given (may be empty). Returns the frame so that predictions can be
// mapped back.
Frame center_sample(const Polyline& true_line, bool rotate, Tensor* context,
                    const std::vector<Tensor*>& lines);

}  // namespace sl
