// The generated dataset the training tests share: small enough for a whole run in about a second
// (single sweeps of 24 laser rings, a ray every 0.6 degrees), with real lines and crops.
#pragma once
#include <cstdint>

#include "data/gen.h"

namespace sl::test {

inline GenConfig tiny_dataset(uint64_t seed, int train_scenes = 3, int val_scenes = 1) {
  GenConfig g;
  g.kind = "sweep";
  g.seed = seed;
  g.train_scenes = train_scenes;
  g.val_scenes = val_scenes;
  g.rings = 24;
  g.azimuth_step_deg = 0.6f;
  return g;
}

}  // namespace sl::test
