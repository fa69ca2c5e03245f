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
//
// Road edges and markings (GenConfig::edges):
//  - "classic" (the default; the main job's data and every published figure): the above, lines in the
//    categories lane_marking (subtype solid / dashed) and curb (subtype high);
//  - "realistic": every road edge and marking a real map has, per scene and side drawn from
//    data/edges.h's catalogue: road_border (at grade or a step <= 1 cm; asphalt to gravel, grass, a
//    sidewalk or a gutter), curbstone:high (10-16 cm, lowered to 2-4 cm at driveways: curbstone:low
//    pieces), curbstone:low (2-6 cm), line_thin / line_thick in solid, dashed (five rhythms),
//    solid_solid, dashed_solid, solid_dashed, and stop lines; each line's category is Lanelet2's
//    "type:subtype" ("road_border", "stop_line" alone). Beyond an edge: sidewalk 0.22, grass 0.12,
//    gravel 0.18 (speckled), gutter concrete 0.30, with a height spread on gravel (8 mm) and grass (12 mm).
//    The map kind's paint is worn and faded as above and also covered in 0-2 stretches per line.
//    The clutter (poles, cars, buildings, vegetation) is placed as in classic. The other draws are
//    classic's, so a realistic scene has the same road (curve, lanes, slope) as the classic one of its seed.
//
// Two kinds of cloud (GenConfig::kind), over the same world and the same lines:
//  - "sweep": the single sweep above, taken at the origin (online mapping from one sweep);
//  - "map" (the default): an accumulated map, as mapping pipelines make one. The vehicle drives its
//    lane over the annotated stretch (s in [-line_half_length, +line_half_length]; the sensor at s = 0
//    is the sweep kind's) and takes a sweep every map_sweep_spacing m (91 sweeps) with the same ray
//    caster (occlusion, curb faces, dropouts, range noise as above; the rings fire together, 600
//    columns). Each sweep keeps its returns within map_range m and registers them into the scene
//    frame with its own pose error (a rigid transform: map_pose_translation per axis,
//    map_pose_rotation_deg about each axis; at most pose_error_bound(cfg) = 1.94 cm within
//    map_range). The sweeps are merged in order and voxel-downsampled (map_voxel: one point per
//    voxel, the centroid with the mean intensity; data/voxel.h). The map covers the road corridor:
//    |s| <= line_half_length + map_margin, |u| <= curb + map_margin (~0.75 M points a scene).
//    Markings are worn there: each has its own paint reflectivity, fading along it and worn through
//    in patches. A sweep casts only the rays that can meet the surface inside the corridor and the
//    range (the others could only return points the map leaves out, or parts of objects that no
//    downward ray sees, e.g. pole tops): about 60% of its 38 k rays (map_cull_check tests this).
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "data/edges.h"
#include "data/evidence.h"
#include "geometry/rng.h"
#include "graph/message.h"
#include "formats/clouds/formats.h"
#include "formats/maps/vector_map.h"

namespace sl {

struct GenConfig {
  uint64_t seed = 7;
  int train_scenes = 24, val_scenes = 6;
  std::string kind = "map";           // "map" (sweeps along the drive, registered, merged, voxel-downsampled) or "sweep"
  std::string edges = "classic";      // "classic" (curbs and lane markings) or "realistic" (data/edges.h; see above)
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
  // The map kind (see above).
  float map_sweep_spacing = 1.0f;     // m driven between sweeps (10 Hz at 36 km/h)
  float map_range = 30.f;             // m; a sweep's farther returns are left out of the map
  float map_azimuth_step_deg = 0.6f;  // a map sweep's column step: 600 columns (900 fill 12% more voxels, same evidence)
  float map_voxel = 0.05f;            // m, the voxel filter's cell
  float map_margin = 5.f;             // m of corridor kept beyond the line ends and the curbs
  float map_pose_translation = 0.007f;   // m: each sweep's position error, uniform in +-this per axis
  float map_pose_rotation_deg = 0.008f;  // its attitude error, uniform in +-this about each axis
  std::string cloud_format = "pcd";   // a writable format of formats/clouds/formats.h: pcd (DATA binary), bin, nuscenes, ply, las
  // World position of the sensor frame's (0, 0, 0): the dataset in a world frame such as UTM
  // ({500000, 5400000, 0}). Clouds and lines are written in world coordinates, in double (PCD
  // F 8, PLY double, LAS scaled ints; a float32 format refuses); {0, 0, 0} writes the sensor
  // frame as before, float32.
  std::array<double, 3> offset{0, 0, 0};
  // One vector map over every scene instead of a lines JSON beside each cloud: "" (lines JSON),
  // "lanelet2" (ROOT/map.osm) or "geojson" (ROOT/map.geojson). The scenes (train, then val) are
  // placed on a grid map_spacing metres apart from `offset` (kMapOffset when {0, 0, 0}), in UTM zone
  // utm_zone north (map_dataset below), so one map covers them all.
  std::string map;
  int utm_zone = 32;
  // The CRS of the world frame, declared in the clouds where the format stores one (LAS: a WKT record,
  // formats/clouds/las.h). gen-data sets it: EPSG:326<utm_zone> with a map, --crs with --offset. Empty: none.
  CloudCrs crs;
  double map_spacing = 400;  // m: clouds reach 80 m and lines 45 m from their sensor, so none overlap
  // With `map`: > 0 writes a tiled point-cloud map instead of a cloud per scene (generate_tiled_map_dataset):
  // the scenes' points cut into square tiles of this side (m) on a grid aligned to multiples of it.
  double tile_size = 0;
  // The sensor's intensity response, to try a model on intensities another sensor would read: each
  // written intensity v (a reflectivity in [0, 1]) becomes intensity_scale * v^intensity_gamma
  // (e.g. scale 0.4: paint at ~0.2 of full scale, as on one real sensor, where the default writes
  // ~0.5). Applied as the clouds are written, after everything else is drawn: the points, lines
  // and evidence are those of the default response (1, 1). A scene per cloud only (not with `map`).
  float intensity_scale = 1.f, intensity_gamma = 1.f;
};

// Where map datasets are placed when GenConfig::offset is not set: UTM zone 32N, on its central meridian.
constexpr std::array<double, 3> kMapOffset{500000, 5400000, 0};

struct SyntheticScene {
  PointCloud cloud;  // fields x, y, z, intensity
  std::vector<Polyline> lines;
  std::vector<std::string> line_subtype;  // per line: "solid" / "dashed" (markings), "high" (curbs); realistic: Lanelet2's subtype ("" for none)
};

// The realistic layout (edges, markings, stop lines) of scene `seed`, as generate_scene with
// cfg.edges = "realistic" draws it (its world alone: no cloud).
RoadLayout road_layout(const GenConfig& cfg, uint64_t seed);

// The seed of scene `index` of a split (0 = train, 1 = val): a scene depends only on it.
uint64_t scene_seed(const GenConfig& cfg, int split, int index);

// One scene in memory (used by generate_dataset, tests and benchmarks), of cfg.kind. A map scene's
// sweeps run in parallel (oneTBB); its bytes do not depend on the thread count.
SyntheticScene generate_scene(const GenConfig& cfg, uint64_t seed);  // checks cfg.kind and cfg.edges

// A map sweep's registration error, a rigid transform about its sensor position: a point p of the
// sweep lands at sensor + Rot(r) (p - sensor) + t. t uniform in +-map_pose_translation per axis, r
// (a rotation vector, rad) in +-map_pose_rotation_deg about each axis.
struct PoseError {
  std::array<double, 3> t{0, 0, 0}, r{0, 0, 0};
};
PoseError draw_pose_error(const GenConfig& cfg, Rng& rng);
std::array<double, 3> apply_pose_error(const PoseError& e, const std::array<double, 3>& sensor, const std::array<double, 3>& p);
// How far the error can move a point within map_range of its sensor: sqrt(3) (T + A map_range),
// A in rad (the defaults: 1.21 cm + 0.73 cm = 1.94 cm).
double pose_error_bound(const GenConfig& cfg);

// The check of a map sweep's ray cull against casting every ray: for sweep `sweep` of the map scene
// `seed`, rays over every ring and 4x the sweep's columns, each met with the surface alone (no
// objects): the rays the sweep would cast or cull, those whose surface point the map keeps (within
// map_range, in the corridor), how many of those the cull drops (0: it drops only what the map leaves
// out or what objects hide), and how far beyond the exit distance the cull assumes a 5 cm march along
// a column finds corridor (<= 0: none).
struct MapCullCheck {
  int64_t cast = 0, culled = 0, kept = 0, culled_but_kept = 0;
  double inside_beyond_exit = -1e30;
};
MapCullCheck map_cull_check(const GenConfig& cfg, uint64_t seed, int sweep);

// The evidence figure (data/evidence.h) of every scene of a split, train then val, as generated.
struct DatasetEvidence {
  EvidenceReport split[2];
};

// root/train/scene_0000.{pcd,json} ... and root/val/scene_0000.{pcd,json} ...; scenes are
// generated in parallel, each file written atomically with the project's writers (the format
// row's writer: write_pcd DATA binary with fields x y z intensity, write_kitti_bin, ...;
// write_lines_json); the bytes depend only on cfg. The clouds are the same in every format, up
// to the format's precision (LAS: 1 mm steps, intensity in 1/65535), and with cfg.offset they
// are the same scenes moved by it.
// Returns the evidence figure of what it wrote.
DatasetEvidence generate_dataset(const std::string& root, const GenConfig& cfg);

// A map dataset (cfg.map set): root/{train,val}/scene_NNNN.<cloud> (no lines JSON) and one map,
// root/map.osm or root/map.geojson, holding every scene's lines, all in UTM (zone cfg.utm_zone,
// north; cfg.offset, or kMapOffset when that is {0, 0, 0}):
//  - Lanelet2 (as JOSM and Lanelet2's writer write it): nodes with lat/lon from the inverse UTM
//    projection (11 decimals, about 1 micrometre) and `ele` (exact: the shortest text of the double).
//    Its frame, as Autoware's map loader reads it (formats/maps/lanelet2.h): clouds that declare their
//    CRS (LAS with cfg.crs) give it to the lat/lon map; clouds that declare none (PCD, PLY, the raw
//    binaries, LAS without cfg.crs) would leave it in Autoware's default, MGRS, while they are in full
//    UTM, so then the map is written as Vector Map Builder writes a local map: every node lat="" lon=""
//    with its UTM easting/northing (exact) in local_x/local_y tags, which Autoware's rule reads as its
//    Local frame with or without a map_projector_info.yaml (none is written). Markings are ways type=line_thin with
//    subtype solid or dashed, curbs type=curbstone subtype=high (realistic edges: each line's category
//    as type and subtype; road_border and stop_line have no subtype tag). Every line is two ways that share the
//    node where they meet (maps split lines where lanelets end), and each lane is two lanelet
//    relations (left and right: the longitudinal markings either side; a lane beside an edge with no
//    edge line gets none).
//  - GeoJSON (RFC 7946): one LineString feature per line, [lon, lat, z] in the shortest text that
//    reads back exactly, properties type, subtype (where there is one) and scene.
// Read with projection auto and the clouds' CRS, or the YAML (or with projection utm) the lines come
// back in the clouds' frame, each on its own scene, to about a micrometre.
DatasetEvidence generate_map_dataset(const std::string& root, const GenConfig& cfg);  // generate_dataset calls it when cfg.map is set
std::array<double, 3> scene_offset(const GenConfig& cfg, int split, int index);  // world position of a scene's sensor frame
std::string map_path(const std::string& root, const GenConfig& cfg);             // root/map.osm or root/map.geojson (tiled: lanelet2_map.osm)
// How the pipelines and infer read the map a map dataset at `root` holds (the map and the first
// split's clouds written): projection auto with the CRS the clouds declare (latlon_crs_spec over the
// first scene's cloud, or the split's tiles), as read_map_lines, map_tiles and infer do; a map read
// alone (inspect) has none and, in lat/lon, stays in Autoware's default (formats/maps/lanelet2.h).
MapReadOptions map_read_options(const std::string& root, const GenConfig& cfg);

// A tiled map dataset (cfg.map set, cfg.tile_size > 0; generate_map_dataset calls it): the same scenes
// on the same UTM grid, their points (world coordinates) cut into tiles of cfg.tile_size metres on the
// grid of its multiples, every split in Autoware's layout, and one map over both splits:
//   root/lanelet2_map.osm (or root/map.geojson)     every scene's lines, as generate_map_dataset writes them
//   root/train/pointcloud_map/<E>_<N><ext>          a tile per grid cell holding points: E, N its cell's
//   root/train/pointcloud_map_metadata.yaml         minimum; the metadata (PCD only: Autoware's is for
//   root/val/...                                    PCD) gives every tile's cell
// The split is by region: the train scenes come first on the grid, row by row, the val scenes after
// them, so no tile and no line is in both. A tile's points keep the scenes' order; its file is written
// with the format's writer (PCD: DATA binary, x y z as F 8 world coordinates; LAS 1.4 format 6, 1 mm).
// The bytes depend only on cfg. Returns the tiles and points written per split.
struct TileCounts {
  int tiles[2] = {0, 0};      // train, val
  int64_t points[2] = {0, 0};
  DatasetEvidence evidence;   // of the scenes before tiling
};
TileCounts generate_tiled_map_dataset(const std::string& root, const GenConfig& cfg);
std::string tile_dir(const std::string& root, int split);  // root/train/pointcloud_map or root/val/pointcloud_map

}  // namespace sl
