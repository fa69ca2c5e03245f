// A vector map's lines given to point clouds: which lines (and which parts of them) lie on a cloud,
// as the pipeline's float32 polylines in that cloud's local frame. Shared by the read_map_lines
// stage (training, evaluation) and `infer --map`; kept apart from both so that a tiled map source
// (many tiles, crops across tiles) can use the same pieces.
//
//   load_map_shared(path, options)    the map read once per process and shared (thread-safe): every
//                                     stage instance, epoch and nested evaluation run gets the same one
//   cloud_box(cloud)                  the cloud's world xy bounding box
//   lines_over(map, boxes, ...)       the parts of the wanted lines whose xy lies in the union of the
//                                     boxes: arc-length intervals [s0, s1] along each map line
//   portion_polyline(map, p, origin)  such a part as a Polyline in a cloud's local frame (id = the map
//                                     line's index, the identity results are written back with)
//
// The rule "a line lies on a cloud" (documented for the user in docs/data.md, read_map_lines): the
// parts of the line whose xy lies inside the cloud's xy bounding box grown by `margin` metres. A line
// that leaves the box is cut at the box's edge (the cut point interpolated on the segment), so a long
// map line over a small tile does not become many pieces without points; a line that leaves and comes
// back gives several parts. A part shorter than `min_length` is left out unless it is the whole line
// (a sliver where a line grazes a corner of the box). z is not compared: a cloud's box covers its
// heights. A later tiled-map source will crop across tiles; one cloud here is one box.
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "graph/message.h"
#include "graph/registry.h"
#include "formats/maps/vector_map.h"

namespace sl {

class Params;

// An axis-aligned box in world x/y (metres), closed. Empty when x0 > x1 or y0 > y1.
struct BoxXY {
  double x0 = 1, y0 = 1, x1 = 0, y1 = 0;
  bool empty() const { return !(x0 <= x1 && y0 <= y1); }
  bool contains(double x, double y) const { return x >= x0 && x <= x1 && y >= y0 && y <= y1; }
  bool intersects(const BoxXY& b) const { return !empty() && !b.empty() && x0 <= b.x1 && b.x0 <= x1 && y0 <= b.y1 && b.y0 <= y1; }
  BoxXY grown(double m) const { return empty() ? *this : BoxXY{x0 - m, y0 - m, x1 + m, y1 + m}; }
};

// The world xy bounding box of a cloud's points (local columns + origin); empty for no points.
BoxXY cloud_box(const PointCloud& cloud);

// A map read once, with what matching needs: each line's xy bounding box.
struct SharedMap {
  VectorMap map;
  std::vector<BoxXY> line_box;  // per map line
};

// The map at `path` read with `options`, shared: a second call for the same file (same size and
// modification time) and options while the first result is alive returns it; concurrent first
// calls read it once. Throws what read_vector_map throws.
std::shared_ptr<const SharedMap> load_map_shared(const std::string& path, const MapReadOptions& options);
SharedMap make_shared_map(VectorMap map);  // the same, for a map already read

// A part of map line `line`: arc lengths s0 <= s1 along it (metres, 3D, from its first vertex, as
// arc_lengths in geometry/line_offsets.h); whole: the part is the line itself.
struct LinePortion {
  uint32_t line = 0;
  double s0 = 0, s1 = 0;
  bool whole = false;
};

// The arc-length intervals of the polyline whose xy lies in the union of `boxes`, merged where they
// meet, in order along the line. A segment is clipped to each box exactly (Liang-Barsky); an end at
// a vertex takes that vertex's arc length exactly.
std::vector<std::array<double, 2>> covered_intervals(const std::vector<Vec3d>& points, const std::vector<BoxXY>& boxes);

// The parts of the lines of the wanted categories (category_matches) that lie over `boxes`, in map
// order and along each line; parts shorter than min_length are left out unless whole.
std::vector<LinePortion> lines_over(const SharedMap& map, const std::vector<BoxXY>& boxes,
                                    const std::vector<std::string>& categories, double min_length);

// The polyline between arc lengths s0 <= s1: the points at s0 and s1 (a vertex where one lies there,
// else interpolated in double) and every vertex strictly between.
std::vector<Vec3d> sub_polyline(const std::vector<Vec3d>& points, double s0, double s1);

// A part as the pipeline's polyline, in the local frame of `origin` (world - origin, in double, then
// float32); a whole line is exactly local_polyline(map, line, origin). Id: the map line's index.
Polyline portion_polyline(const VectorMap& map, const LinePortion& part, const Vec3d& origin);

// The read_map_lines stage's "projection" param (an object) and the ProjectionSpec it gives.
ParamSpec projection_param();
ProjectionSpec projection_of(const Params& p, const std::string& key = "projection");

}  // namespace sl
