// libFuzzer target: see fuzz/targets.h (sl::fuzz::pipeline) and scripts/fuzz.
#include "fuzz/targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  sl::fuzz::pipeline(data, size);
  return 0;
}
