// JSON from untrusted files without unbounded recursion. RapidJSON's recursive parser, its DOM's
// destructor and its writer all recurse once per nesting level, so a 200 KB file of brackets
// (`[[[[...`) overflows the machine stack. Every reader checks the nesting first; no file a
// streamline reader accepts nests anywhere near the limit.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace sl {

inline constexpr int kJsonMaxDepth = 256;

// The byte offset of the first '[' or '{' that opens level max_depth + 1 (levels counted
// outside strings; `//` and `/* */` comments skipped, as the pipeline reader accepts them), or
// -1 when the text never nests that deep. Malformed text is not diagnosed here: the parser
// reports it.
int64_t json_depth_exceeded_at(std::string_view text, int max_depth = kJsonMaxDepth);

// Throws sl::Error "<where>: JSON nested deeper than 256 levels (byte N)" when it does.
void check_json_depth(std::string_view text, const std::string& where, int max_depth = kJsonMaxDepth);

}  // namespace sl
