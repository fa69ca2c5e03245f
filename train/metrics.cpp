#include "train/metrics.h"

#include <cmath>
#include <vector>

namespace sl {

void RefineStats::add(const float* noisy, const float* pred, const float* target, const float* truth, int64_t L) {
  std::vector<float> refined((size_t)L * 3);
  for (int64_t i = 0; i < L * 3; ++i) {
    refined[i] = noisy[i] + pred[i];
    sq_error += std::pow((double)pred[i] - target[i], 2);
  }
  elements += L * 3;
  const double before = mean_line_error(noisy, truth, L), after = mean_line_error(refined.data(), truth, L);
  err_before += before;
  err_after += after;
  improved += after < before;
  ++lines;
}

}  // namespace sl
