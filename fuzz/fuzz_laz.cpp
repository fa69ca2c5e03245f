// libFuzzer target: see fuzz/targets.h (sl::fuzz::laz) and scripts/fuzz.
#include "fuzz/targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  sl::fuzz::laz(data, size);
  return 0;
}
