// Pieces of the project's JSON readers that read numbers exactly. RapidJSON 1.1.0 (Debian's
// rapidjson-dev) misreads some numbers in its full-precision mode (a zero with a large exponent,
// more than 20 significant digits; see stages/io/lines_json.cpp), so readers parse with
// kParseNumbersAsStringsFlag and convert the text here with std::from_chars (correctly rounded).
// (lines_json.cpp has the same conversion inline; it can move to this header.)
#pragma once
#include <rapidjson/document.h>

#include <algorithm>
#include <charconv>
#include <cstdint>

namespace sl {

inline const char* json_type_name(const rapidjson::Value& v) {
  switch (v.GetType()) {
    case rapidjson::kNullType: return "null";
    case rapidjson::kFalseType:
    case rapidjson::kTrueType: return "a boolean";
    case rapidjson::kObjectType: return "an object";
    case rapidjson::kArrayType: return "an array";
    case rapidjson::kStringType: return "a string";
    case rapidjson::kNumberType: return "a number";
  }
  return "?";
}

// Hands the number text s[0, n) to a SAX handler (a Document) as Int64, Uint64 or Double.
template <class Handler>
bool json_exact_number(Handler& h, const char* s, size_t n) {
  const char* e = s + n;
  if (std::none_of(s, e, [](char c) { return c == '.' || c == 'e' || c == 'E'; })) {
    int64_t i;
    if (auto r = std::from_chars(s, e, i); r.ec == std::errc() && r.ptr == e) return h.Int64(i);
    uint64_t u;
    if (auto r = std::from_chars(s, e, u); r.ec == std::errc() && r.ptr == e) return h.Uint64(u);
  }
  double v = 0;
  auto r = std::from_chars(s, e, v);
  if (r.ec == std::errc::result_out_of_range) {
    // Beyond double: long double tells an overflow (inf) from an underflow (0 or a denormal);
    // beyond long double too it can only underflow (the reader refuses huge positive exponents).
    long double lv;
    auto lr = std::from_chars(s, e, lv);
    v = lr.ec == std::errc() ? static_cast<double>(lv) : (*s == '-' ? -0.0 : 0.0);
  } else if (r.ec != std::errc() || r.ptr != e) {
    return false;  // not reached: the reader checked the grammar
  }
  return h.Double(v);
}

}  // namespace sl
