// Deterministic synthetic LiDAR dataset for line refinement.
//
// What a scene contains (sensor frame, like KITTI: sensor at the origin, z up, ground ~ -1.8 m):
//  - ground: a plane with a random slope (<= 2 %) plus smooth roughness (three long sine
//    waves, a few cm) and per-return range noise;
//  - a road through the sensor position, straight or a circular arc (radius 60-300 m, either
//    side), 2-4 lanes of ~3.5 m, dark asphalt;
//  - lane markings: 0.15 m bright stripes, solid at the road edges, dashed (3 m on / 6 m off)
//    or solid between lanes;
//  - curbs: a 0.12-0.15 m height step a short gutter beyond each edge line, with a sidewalk and
//    grass terrain at the raised level behind it;
//  - clutter: poles on the sidewalks, parked cars (boxes) along the road edges, buildings and
//    vegetation blobs (porous, noisy returns) further out;
//  - a spinning sensor at 1.8 m: `rings` laser rings between elevation_min and elevation_max
//    (denser near the horizon), one return per azimuth step, ray-cast against the surface (with
//    the curb face) and the objects: ring pattern, density falling with range, shadows behind
//    objects, random dropouts (more at long range), range noise; max range 80 m.
// Lines (JSON): every marking's centerline and every curb's top edge, one vertex every ~1.5 m,
// z on the surface, over the part of the road within ~45 m of the sensor (a dashed marking is
// one continuous line through its gaps, as annotators draw lane boundaries).
// Intensities are reflectivities in [0, 1] (asphalt ~0.06, markings ~0.65).
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "graph/message.h"

namespace sl {

struct GenConfig {
  uint64_t seed = 7;
  int train_scenes = 24, val_scenes = 6;
  int rings = 64;                     // laser rings
  float azimuth_step_deg = 0.2f;      // one ray per ring per step: 1800 columns
  float elevation_min_deg = -24.8f;   // lowest ring
  float elevation_max_deg = 2.0f;     // highest ring
  float sensor_height = 1.8f;         // m above the ground below the sensor
  float max_range = 80.f;             // m; farther returns are lost
  float range_noise = 0.015f;         // m, std along the ray
  float dropout = 0.02f;              // base probability that a return is lost
  float line_half_length = 45.f;      // m of road annotated on each side of the sensor
  float vertex_spacing = 1.5f;        // m between polyline vertices
  std::string cloud_format = "pcd";   // a writable format of stages/io/formats.h: pcd (DATA binary), bin, nuscenes, ply, las
  // World position of the sensor frame's (0, 0, 0): the dataset in a world frame such as UTM
  // ({500000, 5400000, 0}). Clouds and lines are written in world coordinates, in double (PCD
  // F 8, PLY double, LAS scaled ints; a float32 format refuses); {0, 0, 0} writes the sensor
  // frame as before, float32.
  std::array<double, 3> offset{0, 0, 0};
};

struct SyntheticScene {
  PointCloud cloud;  // fields x, y, z, intensity
  std::vector<Polyline> lines;
};

// The seed of scene `index` of a split (0 = train, 1 = val): a scene depends only on it.
uint64_t scene_seed(const GenConfig& cfg, int split, int index);

// One scene in memory (used by generate_dataset, tests and benchmarks).
SyntheticScene generate_scene(const GenConfig& cfg, uint64_t seed);

// root/train/scene_0000.{pcd,json} ... and root/val/scene_0000.{pcd,json} ...; scenes are
// generated in parallel, each file written atomically with the project's writers (the format
// row's writer: write_pcd DATA binary with fields x y z intensity, write_kitti_bin, ...;
// write_lines_json); the bytes depend only on cfg. The clouds are the same in every format, up
// to the format's precision (LAS: 1 mm steps, intensity in 1/65535), and with cfg.offset they
// are the same scenes moved by it.
void generate_dataset(const std::string& root, const GenConfig& cfg);

}  // namespace sl
