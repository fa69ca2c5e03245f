// `streamline inspect FILE`: what a data file holds — header, point count, per-field statistics
// (PCD: every field, every element of COUNT > 1 fields as "name[k]", NaN counted not dropped),
// lines per category for lines JSON. Coordinates are reported in world coordinates, in double:
// the cloud is decoded into the local frame of `origin` (as the pipeline would) and its x, y, z
// statistics are local + origin.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "formats/clouds/origin.h"

namespace sl {

struct FieldStats {
  std::string name;
  double min = 0, max = 0, mean = 0;  // over non-NaN values; NaN when there are none
  int64_t nan_count = 0;
};

struct InspectReport {
  std::string path, format;  // format: a cloud format's name (formats/clouds/formats.h) or "lines_json"
  std::vector<std::pair<std::string, std::string>> header;  // key/value, in file order
  int64_t points = 0;        // cloud points, or the total of line points for lines JSON
  std::vector<FieldStats> fields;
  int64_t lines = 0;
  std::map<std::string, int64_t> categories;  // lines per category
  Vec3d origin{0, 0, 0};  // the local frame the cloud was decoded in (clouds only)
  std::string warning;    // e.g. coordinates stored as float32 too coarsely (coarse_warning)
};

// Dispatches on the extension (a cloud format of formats/clouds/formats.h, or .json). Throws
// sl::Error naming the file.
InspectReport inspect_file(const std::string& path, const OriginPolicy& origin = OriginPolicy::auto_rule());
std::string to_text(const InspectReport& r);
std::string to_json(const InspectReport& r);  // NaN statistics are written as null

}  // namespace sl
