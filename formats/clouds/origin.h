// World coordinates and the local frame of a cloud.
//
// Mapping data lives in projected world frames (UTM: easting ~5e5 m, northing ~5.4e6 m), where
// float32 has a step of 0.5 m. So every decoded cloud carries an origin in double
// (PointCloud::origin) and its float32 columns hold world - origin, subtracted in double; the
// lines of the scene are shifted by the same origin, in double (formats/maps/lines_json.h).
// Sampling, training and evaluation run in that local frame; whatever is written for a user
// (refined lines, eval examples, inspect) is world = local + origin, in double.
//
// The origin of a cloud (OriginPolicy):
//  - fixed: given -- read_cloud's "origin": [x, y, z], the CLI's --origin x,y,z. A tiled map
//    gives all of its tiles one origin, so lines that cross tiles live in one frame.
//  - auto (the default of the reader stages and of the CLI): from the file alone, deterministic:
//      LAS: the header's offset, when every point lies within kLasOffsetReach (2048 m) of it on
//           every axis (the writer put it near the data; float32's step there is at most
//           0.12 mm). A file whose offset is 0 while its points are at 5e6 m fails that test;
//      otherwise, and for every other format: the minimum of the points' bounding box rounded
//           down to a multiple of kOriginGrid (100 m), per axis. z is rounded too: an ordinary
//           elevation needs no origin, but coordinates in an Earth-centred frame (ECEF) have z as
//           large as x and y, and for small z the rule costs nothing.
//    Data shifted by a multiple of 100 m gets an origin shifted by exactly as much: its local
//    coordinates, hence its samples, are the same (tests/formats/maps/utm_equivalence_test.cpp).
//  - stored: {0, 0, 0}, the columns are the stored values as float32 -- the default of the
//    per-format functions (read_pcd, read_ply, ...), which tests and tools call directly.
//
// Precision: a file whose coordinates are STORED as float32 beyond kFloat32CoarseAbove (1e5 m,
// where float32's step is 7.8 mm, 1.6 cm past 131,072 m) lost its precision before we read it;
// no origin brings it back. DecodeInfo::coarse() says so, and the reader stages warn once per
// file and run (coarse_warning).
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>

#include "graph/message.h"
#include "graph/registry.h"

namespace sl {

class Params;

using Vec3d = std::array<double, 3>;

constexpr double kOriginGrid = 100.0;       // m: the auto origin is a multiple of this, per axis
constexpr double kLasOffsetReach = 2048.0;  // m: a LAS offset this close to every point is the origin
constexpr double kFloat32CoarseAbove = 1e5; // m: float32-stored coordinates beyond this are coarse

struct OriginPolicy {
  bool automatic = false;
  Vec3d fixed{0, 0, 0};  // the origin when !automatic
  static OriginPolicy auto_rule() { return {true, {0, 0, 0}}; }
  static OriginPolicy at(const Vec3d& o) { return {false, o}; }
  static OriginPolicy stored() { return {false, {0, 0, 0}}; }
  std::string describe() const;  // "auto" or "[x, y, z]" (17 significant digits)
};

// How a cloud is decoded (the format table's decoders take these; formats/clouds/formats.h).
struct DecodeOptions {
  bool drop_nan = true;  // points with a non-finite x, y or z are dropped (and counted)
  OriginPolicy origin = OriginPolicy::auto_rule();
};

// What a decoder found out beyond the cloud itself.
struct DecodeInfo {
  int64_t dropped = 0;          // non-finite points dropped
  double float32_extent = 0;    // largest |stored coordinate| of a cloud stored as float32 (0: stored wider)
  bool coarse() const { return float32_extent > kFloat32CoarseAbove; }
};

// Per-axis bounds of the finite coordinates of points; an axis without any stays [+inf, -inf].
struct Bounds {
  Vec3d lo{kInf, kInf, kInf}, hi{-kInf, -kInf, -kInf};
  int64_t points = 0;
  bool empty() const { return points == 0; }
  bool has(int axis) const { return lo[size_t(axis)] <= hi[size_t(axis)]; }
  void add(double x, double y, double z);  // non-finite values are left out, per axis
  void merge(const Bounds& b);
  static constexpr double kInf = std::numeric_limits<double>::infinity();
};

// Per axis, lo rounded down to a multiple of kOriginGrid ({0, 0, 0} for empty bounds).
Vec3d grid_origin(const Bounds& world);
// The origin `p` gives a cloud whose world coordinates have bounds `world` (auto: grid_origin).
Vec3d resolve_origin(const OriginPolicy& p, const Bounds& world);

// Bounds of the finite values of three float columns.
Bounds float_bounds(const float* x, const float* y, const float* z, size_t n);

// For the readers of coordinates stored as float32 (PCD F 4, PLY float, KITTI, nuScenes): the
// first three columns hold the stored x, y, z. Records their extent in *info (coarse()),
// resolves `p` on their bounds, and moves them into the frame of that origin: local =
// float(stored - origin), correctly rounded (float subtraction of two exact floats: the same
// value the double path gives a float64 copy of the data), cloud.origin set. Points the origin
// would put beyond float's range are dropped when drop_nan (returns how many).
int64_t localize_float32(PointCloud& cloud, const OriginPolicy& p, DecodeInfo* info, bool drop_nan);

// local = float(world - origin) and world = double(local) + origin, per axis.
inline float to_local(double world, double origin) { return static_cast<float>(world - origin); }
inline double to_world(float local, double origin) { return static_cast<double>(local) + origin; }

// The CLI's --origin: "auto", or "x,y,z" (three finite numbers). Throws sl::Error at `where`.
OriginPolicy parse_origin(const std::string& text, const std::string& where);
// The reader stages' "origin" param ("auto", or [x, y, z]); origin_of reads it.
ParamSpec origin_param();
OriginPolicy origin_of(const Params& p, const std::string& key = "origin");

// The one warning for a cloud stored as float32 beyond kFloat32CoarseAbove.
std::string coarse_warning(const std::string& path, const DecodeInfo& info);

// Shortest text that reads back to exactly `v` (std::to_chars), in plain digits for magnitudes
// from 1e-5 to 1e16 (5400000.25, not 5.40000025e+06): how world coordinates are written.
std::string exact_number(double v);

}  // namespace sl
