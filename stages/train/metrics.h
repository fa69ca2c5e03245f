// Refinement error in metres: how far the points of a line are from the true line.
#pragma once
#include <cstdint>

namespace sl {

// Distance of point p (3 floats) to the polyline `line` [n,3] (segments), in metres.
double point_to_polyline(const float* p, const float* line, int64_t n);

// Mean over the L points of `pts` [L,3] of their distance to `truth` [L,3] (as a polyline).
double mean_line_error(const float* pts, const float* truth, int64_t L);

struct RefineStats {
  int64_t lines = 0, improved = 0;
  double err_before = 0, err_after = 0, sq_error = 0;  // sums over lines; sq_error over elements
  int64_t elements = 0;
  // One line: noisy [L,3], predicted offset [L,3], true offset [L,3], true line [L,3].
  void add(const float* noisy, const float* pred, const float* target, const float* truth, int64_t L);
  double mean_before() const { return lines ? err_before / lines : 0; }
  double mean_after() const { return lines ? err_after / lines : 0; }
  double mse() const { return elements ? sq_error / elements : 0; }
  double improved_share() const { return lines ? (double)improved / lines : 0; }
};

}  // namespace sl
