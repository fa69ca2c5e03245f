// Skipped items grouped for a reader: the run summary, run.json and the report list them by stage
// and cause. A view of SkipRecord (graph/stage.h) kept low, beside the engine, so that the engine
// can add up the groups of the ranks of a data-parallel run (graph/run_totals.h) and the report
// read them without either including the other.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "graph/stage.h"

namespace sl {

// Skipped items of one stage and one cause: reasons differ in their numbers ("4 points within
// 2.00 m"), so they are grouped with the digits masked ("# points within # m").
struct SkipGroup {
  std::string stage, pattern;
  int64_t count = 0;
  std::vector<SkipRecord> examples;  // the first few
};

// Examples kept per group: a run that skips every sample would otherwise write a run.json as
// large as its dataset.
constexpr size_t kSkipExamples = 3;

std::string reason_pattern(const std::string& reason);
// Most frequent first; groups of equal count in the order of their first item.
std::vector<SkipGroup> group_skips(const std::vector<SkipRecord>& skips);

}  // namespace sl
