#include "graph/skips.h"

#include <algorithm>
#include <cctype>
#include <map>

namespace sl {

std::string reason_pattern(const std::string& reason) {
  std::string o;
  for (size_t i = 0; i < reason.size(); ++i) {
    const bool digit = std::isdigit((unsigned char)reason[i]);
    // A decimal point between digits belongs to the number: "2.00" is one '#'.
    const bool point = reason[i] == '.' && !o.empty() && o.back() == '#' && i + 1 < reason.size() &&
                       std::isdigit((unsigned char)reason[i + 1]);
    if (!digit && !point) o += reason[i];
    else if (o.empty() || o.back() != '#') o += '#';
  }
  return o;
}

std::vector<SkipGroup> group_skips(const std::vector<SkipRecord>& skips) {
  std::vector<SkipGroup> groups;
  std::map<std::pair<std::string, std::string>, size_t> index;
  for (const auto& s : skips) {
    auto key = std::make_pair(s.stage, reason_pattern(s.reason));
    auto it = index.find(key);
    if (it == index.end()) {
      it = index.emplace(key, groups.size()).first;
      groups.push_back({s.stage, key.second, 0, {}});
    }
    SkipGroup& g = groups[it->second];
    ++g.count;
    if (g.examples.size() < kSkipExamples) g.examples.push_back(s);
  }
  std::stable_sort(groups.begin(), groups.end(), [](const SkipGroup& a, const SkipGroup& b) { return a.count > b.count; });
  return groups;
}

}  // namespace sl
