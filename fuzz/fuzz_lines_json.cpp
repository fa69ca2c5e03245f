// libFuzzer target: see fuzz/targets.h (sl::fuzz::lines_json) and scripts/fuzz.
#include "fuzz/targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  sl::fuzz::lines_json(data, size);
  return 0;
}
