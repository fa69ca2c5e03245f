// The shipped tiles pipeline (pipelines/line_refine_train_tiles.json) with its map stage given an
// Autoware map folder alone (map_tiles' map_dir) in place of its root and map: what the map-folder
// training tests run.
#pragma once
#include <string>

#include "graph/atomic_file.h"

namespace sl::test {

// The pipeline's text, or "" when the shipped pipeline's map_tiles params are no longer the ones
// replaced here (the caller fails on it).
inline std::string tiles_pipeline_on_map_dir(const std::string& map_dir) {
  std::string pipeline = read_file(std::string(SL_SOURCE_DIR) + "/pipelines/line_refine_train_tiles.json");
  const std::string parts = R"("root": "data/tiles/train/pointcloud_map", "map": "../../lanelet2_map.osm",)";
  const size_t at = pipeline.find(parts);
  if (at == std::string::npos) return "";
  return pipeline.replace(at, parts.size(), "\"map_dir\": \"" + map_dir + "\",");
}

}  // namespace sl::test
