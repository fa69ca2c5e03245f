// The learning rate per epoch: optimizer.schedule in train_step. A function of the epoch and the
// run's epoch count only, so a resumed run steps with the rate the uninterrupted run had.
#pragma once
#include <cstdint>
#include <string>

namespace sl {

enum class LrSchedule { kConstant, kCosine };

// "constant" / "cosine" -> the schedule; throws sl::Error naming `where` for another name.
LrSchedule parse_lr_schedule(const std::string& name, const std::string& where);

// constant: lr. cosine: min_lr + (lr - min_lr) (1 + cos(pi e / epochs)) / 2 for epoch e
// (0-based; epochs >= 1): lr in the first epoch, falling by half-cosine towards min_lr in the last
// (SGDR / PyTorch's CosineAnnealingLR with T_max = epochs, stepped once an epoch). Epochs past
// the last (a run continued with more) stay at min_lr.
double scheduled_lr(LrSchedule s, double lr, double min_lr, int64_t epoch, int64_t epochs);

}  // namespace sl
