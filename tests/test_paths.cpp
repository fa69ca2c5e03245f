#include "tests/test_paths.h"

#include <cstdlib>

const char* sl_test_path(const char* env_name, const char* built_in) {
  const char* v = std::getenv(env_name);
  return v != nullptr && *v != '\0' ? v : built_in;
}
