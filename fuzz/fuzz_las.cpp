// libFuzzer target: see fuzz/targets.h (sl::fuzz::las) and scripts/fuzz.
#include "fuzz/targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  sl::fuzz::las(data, size);
  return 0;
}
