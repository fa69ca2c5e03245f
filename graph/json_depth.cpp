#include "graph/json_depth.h"

#include "graph/error.h"

namespace sl {

int64_t json_depth_exceeded_at(std::string_view text, int max_depth) {
  const char* p = text.data();
  const size_t n = text.size();
  int depth = 0;
  for (size_t i = 0; i < n; ++i) {
    const char c = p[i];
    if (c == '"') {  // a string: skip to its closing quote, over escapes
      for (++i; i < n && p[i] != '"'; ++i)
        if (p[i] == '\\') ++i;
    } else if (c == '/' && i + 1 < n && p[i + 1] == '/') {
      while (i < n && p[i] != '\n') ++i;
    } else if (c == '/' && i + 1 < n && p[i + 1] == '*') {
      for (i += 2; i + 1 < n && !(p[i] == '*' && p[i + 1] == '/'); ++i) {
      }
      ++i;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return (int64_t)i;
    } else if (c == ']' || c == '}') {
      if (depth > 0) --depth;
    }
  }
  return -1;
}

void check_json_depth(std::string_view text, const std::string& where, int max_depth) {
  const int64_t at = json_depth_exceeded_at(text, max_depth);
  if (at >= 0)
    fail(where, "JSON nested deeper than " + std::to_string(max_depth) + " levels (byte " + std::to_string(at) + ")");
}

}  // namespace sl
