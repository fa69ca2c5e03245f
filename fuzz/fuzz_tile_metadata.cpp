// libFuzzer target: see fuzz/targets.h (sl::fuzz::tile_metadata) and scripts/fuzz.
#include "fuzz/targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  sl::fuzz::tile_metadata(data, size);
  return 0;
}
