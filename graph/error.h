// Errors that name the place: every failure a user can cause is an sl::Error whose message
// says which file (or pipeline location) and why. Code never calls exit() on bad input.
#pragma once
#include <stdexcept>
#include <string>

namespace sl {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// An output file that could not be written (a full disk, a file size limit, an I/O error): the
// run ends with it, never a warning; what was written before stays whole (graph/atomic_file.h).
class WriteError : public Error {
 public:
  using Error::Error;
};

// "<where>: <reason>" -- where is a path, a path with a byte offset, or a JSON pointer.
[[noreturn]] inline void fail(const std::string& where, const std::string& reason) {
  throw Error(where + ": " + reason);
}

// Raised when the user interrupted the run (Ctrl-C); maps to exit code 130.
class Interrupted : public std::runtime_error {
 public:
  Interrupted() : std::runtime_error("interrupted") {}
};

}  // namespace sl
