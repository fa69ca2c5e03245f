// Refinement error over an evaluation: the line error (kernels/line_error.h) of the perturbed
// input and of the refined line, summed over the validation lines.
#pragma once
#include <cstdint>

#include "kernels/line_error.h"

namespace sl {

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
