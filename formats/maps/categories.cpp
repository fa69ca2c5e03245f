#include "formats/maps/categories.h"

namespace sl {

std::string canonical_category(const std::string& category) {
  if (category == "curb") return "curbstone:high";
  if (category == "lane_marking") return "line_thin";
  return category;
}

std::vector<std::string> category_filter_entries(const std::string& entry) {
  if (entry == "lane_marking") return {"line_thin", "line_thick"};
  if (entry == "curb") return {"curbstone"};
  return {entry};
}

namespace {

// `entry` selects `category` (both in Lanelet2's names): equal, or entry is the type of category's type:subtype.
bool selects(const std::string& entry, const std::string& category) {
  if (category == entry) return true;
  return entry.find(':') == std::string::npos && category.size() > entry.size() &&
         category.compare(0, entry.size(), entry) == 0 && category[entry.size()] == ':';
}

}  // namespace

bool non_physical_category(const std::string& category) {
  for (const char* type : {"virtual", "traffic_sign", "traffic_light", "light_bulbs"})
    if (selects(type, category)) return true;
  return false;
}

bool category_matches(const std::string& category, const std::vector<std::string>& wanted) {
  if (wanted.empty()) return !non_physical_category(category);
  const std::string c = canonical_category(category);
  for (const auto& w : wanted) {
    if (category == w) return true;
    for (const auto& e : category_filter_entries(w))
      if (selects(e, c)) return true;
  }
  return false;
}

}  // namespace sl
