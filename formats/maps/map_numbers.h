// Numbers as the vector-map readers and writers read and write them: strict, exact, locale-free.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace sl {

// The whole text is one finite decimal number (std::from_chars: no sign '+', no spaces, no hex;
// correctly rounded). False otherwise, or when it is out of double range.
bool parse_double(std::string_view text, double* out);
// The whole text is one int64 (an optional '-', digits).
bool parse_int64(std::string_view text, int64_t* out);
// Digits after the decimal point ("12.340" -> 3, "7" -> 0, "1.5e3" -> 1).
int decimals_of(std::string_view number);

// Fixed decimals (at most 17), no "-0.000" (a value that rounds to zero is written unsigned).
std::string format_fixed(double v, int decimals);
// Degrees as Lanelet2's writer (and JOSM) writes lat/lon: 11 decimals, trailing zeros trimmed
// (1e-11 degree is about a micrometre).
std::string format_degrees(double v);
// The shortest text that reads back to exactly v (std::to_chars).
std::string format_shortest(double v);

}  // namespace sl
