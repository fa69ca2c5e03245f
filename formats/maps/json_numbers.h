// Pieces of the project's JSON readers that read numbers exactly. RapidJSON 1.1.0 (Debian's
// rapidjson-dev) misreads some numbers in its full-precision mode (a zero with a large exponent,
// more than 20 significant digits; see formats/maps/lines_json.cpp), so readers parse with
// kParseNumbersAsStringsFlag and convert the text here with std::from_chars (correctly rounded).
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

// The SAX handler the readers parse with: everything goes to the Document as it would, but the
// numbers, which arrive as text, are converted by json_exact_number. A reader that needs more
// (geojson.cpp: where each number is in the text) derives from it and hides RawNumber.
struct ExactNumbers {
  rapidjson::Document& d;
  bool Null() { return d.Null(); }
  bool Bool(bool b) { return d.Bool(b); }
  bool Int(int i) { return d.Int(i); }
  bool Uint(unsigned i) { return d.Uint(i); }
  bool Int64(int64_t i) { return d.Int64(i); }
  bool Uint64(uint64_t i) { return d.Uint64(i); }
  bool Double(double v) { return d.Double(v); }
  bool String(const char* s, rapidjson::SizeType n, bool copy) { return d.String(s, n, copy); }
  bool Key(const char* s, rapidjson::SizeType n, bool copy) { return d.Key(s, n, copy); }
  bool StartObject() { return d.StartObject(); }
  bool EndObject(rapidjson::SizeType n) { return d.EndObject(n); }
  bool StartArray() { return d.StartArray(); }
  bool EndArray(rapidjson::SizeType n) { return d.EndArray(n); }
  bool RawNumber(const char* s, rapidjson::SizeType n, bool) { return json_exact_number(d, s, n); }
};

}  // namespace sl
