// libFuzzer target: see fuzz/map_targets.h (sl::fuzz::geojson) and scripts/fuzz.
#include "fuzz/map_targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  sl::fuzz::geojson(data, size);
  return 0;
}
