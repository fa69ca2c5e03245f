#include "train/lr_schedule.h"

#include <algorithm>
#include <cmath>

#include "graph/error.h"

namespace sl {

LrSchedule parse_lr_schedule(const std::string& name, const std::string& where) {
  if (name == "constant") return LrSchedule::kConstant;
  if (name == "cosine") return LrSchedule::kCosine;
  fail(where, "unknown schedule '" + name + "' (constant or cosine)");
}

double scheduled_lr(LrSchedule s, double lr, double min_lr, int64_t epoch, int64_t epochs) {
  if (s == LrSchedule::kConstant || epochs < 1) return lr;
  const double t = (double)std::clamp<int64_t>(epoch, 0, epochs) / (double)epochs;
  return min_lr + (lr - min_lr) * 0.5 * (1.0 + std::cos(M_PI * t));
}

}  // namespace sl
