#include "formats/maps/map_numbers.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace sl {

bool parse_double(std::string_view t, double* out) {
  if (t.empty()) return false;
  // from_chars also takes "inf", "nan" and hex digits without a prefix: only decimal text here.
  for (char c : t)
    if (!((c >= '0' && c <= '9') || c == '-' || c == '.' || c == 'e' || c == 'E' || c == '+')) return false;
  double v = 0;
  auto r = std::from_chars(t.data(), t.data() + t.size(), v);
  if (r.ec != std::errc() || r.ptr != t.data() + t.size() || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

bool parse_int64(std::string_view t, int64_t* out) {
  int64_t v = 0;
  auto r = std::from_chars(t.data(), t.data() + t.size(), v);
  if (t.empty() || r.ec != std::errc() || r.ptr != t.data() + t.size()) return false;
  *out = v;
  return true;
}

int decimals_of(std::string_view n) {
  const size_t dot = n.find('.');
  if (dot == std::string_view::npos) return 0;
  size_t e = n.find_first_of("eE", dot);
  if (e == std::string_view::npos) e = n.size();
  return int(e - dot - 1);
}

std::string format_fixed(double v, int decimals) {
  decimals = decimals < 0 ? 0 : decimals > 17 ? 17 : decimals;  // beyond 17, digits a double does not hold
  std::string s(size_t(std::snprintf(nullptr, 0, "%.*f", decimals, v)), '\0');
  std::snprintf(s.data(), s.size() + 1, "%.*f", decimals, v);
  if (s[0] == '-' && s.find_first_not_of("-0.") == std::string::npos) s.erase(0, 1);
  return s;
}

std::string format_degrees(double v) {
  std::string s = format_fixed(v, 11);
  if (s.find('.') != std::string::npos) {
    s.erase(s.find_last_not_of('0') + 1);
    if (s.back() == '.') s.pop_back();
  }
  return s;
}

std::string format_shortest(double v) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

}  // namespace sl
