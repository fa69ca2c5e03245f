// Annotated 3D polylines of one scene, as JSON beside its cloud (scene_0001.pcd + scene_0001.json):
//
//   {"frame": "scene_0001",
//    "lines": [{"id": 0, "category": "lane_marking", "points": [[x, y, z], ...]}, ...]}
//
// "frame" (string) and "lines" (array) are required; every line needs "id" (integer),
// "category" (string) and "points" (array of >= 2 [x, y, z] arrays of finite numbers). Other
// keys are ignored, so annotation tools may carry extra attributes.
//
// Policy: one bad line fails the whole file (sl::Error naming the file and the JSON pointer of
// the bad value). A half-read scene would silently train on incomplete labels; the stage's
// error policy (skip) then drops the scene, counts it and reports it.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "graph/message.h"

namespace sl {

// The file's coordinates are world coordinates (the cloud's frame, e.g. UTM); in memory the points
// are local, world - origin, the origin of the scene's cloud (formats/clouds/origin.h).
struct LinesFile {
  std::string frame;
  std::vector<Polyline> lines;
  std::array<double, 3> origin{0, 0, 0};  // world position of local (0, 0, 0)
};

// categories: keep only lines of these categories (empty = all), as category_matches selects them
// (formats/maps/categories.h: a type selects its type:subtype; lane_marking and curb are aliases of
// Lanelet2's names, both ways). Lines that are filtered out
// are still validated. A line with more than max_points_per_line points is an error. Every
// coordinate is read as a double (correctly rounded) and becomes float(world - origin): the
// shift is exact, in double, before anything is rounded to float32.
LinesFile read_lines_json(const std::string& path, const std::vector<std::string>& categories = {},
                          int64_t max_points_per_line = 100000, const std::array<double, 3>& origin = {0, 0, 0});
// Same, from text in memory; `path` is used in error messages only.
LinesFile parse_lines_json(const std::string& text, const std::string& path,
                           const std::vector<std::string>& categories = {}, int64_t max_points_per_line = 100000,
                           const std::array<double, 3>& origin = {0, 0, 0});

// Writes atomically, in world coordinates: point + file.origin. With origin {0, 0, 0} the
// coordinates are the floats themselves, 9 significant digits (reads back to the same float);
// otherwise each world coordinate is a double, written in the shortest text that reads back to
// exactly it (at most 17 significant digits). Throws sl::Error on a non-finite coordinate (JSON
// has no NaN).
void write_lines_json(const std::string& path, const LinesFile& file);

}  // namespace sl
