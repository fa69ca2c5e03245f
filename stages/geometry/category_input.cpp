#include "stages/geometry/category_input.h"

#include <algorithm>

#include "formats/maps/categories.h"
#include "graph/error.h"

namespace sl {

CategoryOneHot::CategoryOneHot(std::vector<std::string> entries, const std::string& where) : entries_(std::move(entries)) {
  if (entries_.empty()) fail(where, "needs at least one category (the one-hot's columns, in order)");
  for (size_t i = 0; i < entries_.size(); ++i) {
    if (entries_[i].empty()) fail(where, "entry " + std::to_string(i) + " is empty");
    for (size_t j = 0; j < i; ++j)
      if (canonical_category(entries_[j]) == canonical_category(entries_[i]))
        fail(where, "'" + entries_[i] + "' is given twice (entries " + std::to_string(j) + " and " + std::to_string(i) +
                        "; aliases resolved)");
  }
}

int CategoryOneHot::slot(const std::string& category) const {
  for (size_t i = 0; i < entries_.size(); ++i)
    if (category_matches(category, {entries_[i]})) return (int)i;
  return -1;
}

void CategoryOneHot::append(Tensor* noisy_line, int slot) const {
  const auto& sh = noisy_line->shape;
  if (sh.size() != 2 || sh[1] != 3)
    throw Error("category_input: noisy_line should be [L, 3], got " + noisy_line->shape_str() +
                " (the one-hot is appended once, after every stage that moves or mirrors the line)");
  if (slot < 0 || slot >= width()) throw Error("category_input: slot " + std::to_string(slot) + " out of range");
  const int64_t L = sh[0], W = 3 + width();
  Tensor out({L, W});
  for (int64_t l = 0; l < L; ++l) {
    std::copy_n(noisy_line->data.data() + l * 3, 3, out.data.data() + l * W);
    out.data[(size_t)(l * W + 3 + slot)] = 1.f;  // the rest stays 0
  }
  *noisy_line = std::move(out);
}

std::string CategoryOneHot::list() const {
  std::string o = "[";
  for (size_t i = 0; i < entries_.size(); ++i) o += (i ? ", " : "") + entries_[i];
  return o + "]";
}

std::string sample_category(const Sample& s) {
  if (!s.scene || s.line_index < 0 || (size_t)s.line_index >= s.scene->lines.size()) return "";
  return s.scene->lines[(size_t)s.line_index].category;
}

}  // namespace sl
