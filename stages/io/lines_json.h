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
#include <cstdint>
#include <string>
#include <vector>

#include "graph/message.h"

namespace sl {

struct LinesFile {
  std::string frame;
  std::vector<Polyline> lines;
};

// categories: keep only lines of these categories (empty = all). Lines that are filtered out
// are still validated. A line with more than max_points_per_line points is an error.
LinesFile read_lines_json(const std::string& path, const std::vector<std::string>& categories = {},
                          int64_t max_points_per_line = 100000);
// Same, from text in memory; `path` is used in error messages only.
LinesFile parse_lines_json(const std::string& text, const std::string& path,
                           const std::vector<std::string>& categories = {}, int64_t max_points_per_line = 100000);

// Writes atomically, coordinates with 9 significant digits (reads back to the same float).
// Throws sl::Error on a non-finite coordinate (JSON has no NaN).
void write_lines_json(const std::string& path, const LinesFile& file);

}  // namespace sl
