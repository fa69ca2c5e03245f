// Writing output files so that a crash, a full disk or Ctrl-C never leaves a half-written file:
// the bytes go to "<path>.tmp.<pid>", are fsync'ed, then renamed over <path>.
#pragma once
#include <string>
#include <string_view>

namespace sl {

// Throws sl::Error naming the path and the reason (e.g. "No space left on device"); on failure
// the previous file at `path`, if any, is left intact and the temporary file is removed.
void write_file_atomic(const std::string& path, std::string_view bytes);
// Same, with the content given as several pieces (avoids concatenating large buffers).
void write_file_atomic(const std::string& path, const std::string_view* pieces, size_t count);

// Reads a whole regular file; throws sl::Error naming the path when it is missing, a
// directory, or unreadable.
std::string read_file(const std::string& path);

}  // namespace sl
