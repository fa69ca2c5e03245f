// The line's category as an input of the model: a one-hot over a pipeline's list of categories,
// appended to every noisy line point's x, y, z (noisy_line [L, 3] -> [L, 3 + C]), so that the
// line MLP reads it (train_step's model.line_channels = 3 + C). The stage is category_input
// (category_input_stage.cpp); this is its math, testable without a graph.
#pragma once
#include <string>
#include <vector>

#include "graph/message.h"

namespace sl {

class CategoryOneHot {
 public:
  // `entries` in one-hot order; each a category or a filter entry as read_lines_json takes them
  // (formats/maps/categories.h: "line_thin" stands for every line_thin:<subtype>, "curb" for every
  // curbstone). Throws sl::Error at `where` for an empty list or entry, or an entry given twice
  // (aliases resolved: "curb" and "curbstone:high" as data are one).
  CategoryOneHot(std::vector<std::string> entries, const std::string& where);

  int width() const { return (int)entries_.size(); }
  const std::vector<std::string>& entries() const { return entries_; }
  // The slot of a line's category: the first entry that matches it (aliases resolved on either
  // side), -1 when none does.
  int slot(const std::string& category) const;
  // noisy_line [L, 3] -> [L, 3 + width()]: each point's x, y, z, then 1 in column 3 + slot and 0
  // in the others. Throws sl::Error for a noisy_line that is not [L, 3] or a slot out of range.
  void append(Tensor* noisy_line, int slot) const;
  // "[road_border, curbstone:high, ...]" for messages.
  std::string list() const;

 private:
  std::vector<std::string> entries_;
};

// The category of the line a sample was made from ("" when the sample names no line of its scene).
std::string sample_category(const Sample& s);

}  // namespace sl
