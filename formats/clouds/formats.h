// The point-cloud formats streamline reads, one row each. scan_dataset (which files are scenes),
// read_cloud (the decoder), inspect, infer and gen-data all look a file's format up here. A
// format's reader file ends with its row -- SL_REGISTER_CLOUD_FORMAT(fn), fn returning the row --
// so a new format is one new file and nothing else edited (see formats/clouds/ply.cpp).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "graph/message.h"
#include "formats/clouds/origin.h"

namespace sl {

// A CRS declared in a written file, by formats that store one (LAS): its EPSG code and its OGC WKT
// (WKT1, what LAS 1.4 stores; formats/maps/projection.h: projected_crs_wkt gives it). Empty: none.
struct CloudCrs {
  int epsg = 0;
  std::string wkt;
  bool empty() const { return epsg == 0 && wkt.empty(); }
};

struct CloudFormat {
  std::string name;       // what pipelines and the CLI call it: "pcd", "bin", "nuscenes", "ply"
  std::string extension;  // ".pcd", ".bin", ".pcd.bin", ".ply": the longest matching one wins
  std::string doc;        // one line, for --help and docs/data.md
  // Columns x, y, z, intensity: x, y, z local, world - the origin opt.origin gives (recorded in
  // cloud.origin; formats/clouds/origin.h); points with a non-finite x, y or z dropped (and counted
  // in info->dropped) when opt.drop_nan; info->float32_extent set for coordinates stored as
  // float32. Throws sl::Error naming the file and the reason.
  PointCloud (*decode)(const std::string& path, const DecodeOptions& opt, DecodeInfo* info);
  // The points a file holds, from its header or size alone (without decoding).
  int64_t (*count)(const std::string& path);
  // Writes x, y, z, intensity (gen-data --format), atomically: world coordinates, column +
  // cloud.origin (a format that stores float32 coordinates refuses a cloud with an origin).
  // Null for a format that is only read (LAZ).
  void (*write)(const std::string& path, const PointCloud& cloud);
  // The same, declaring `crs` in the file; null for a format that stores no CRS (write_cloud).
  void (*write_crs)(const std::string& path, const PointCloud& cloud, const CloudCrs& crs) = nullptr;
  // Set for a format whose files are recognised but not decoded: why, and what to do (none now).
  // scan_dataset refuses such a dataset before the run; inspect still shows the header.
  const char* refused = nullptr;
};

// Adds a row; throws sl::Error on a name or an extension already taken.
void add_cloud_format(CloudFormat f);
struct CloudFormatRegistrar {
  explicit CloudFormatRegistrar(CloudFormat (*row)());
};
#define SL_FORMAT_CONCAT2(a, b) a##b
#define SL_FORMAT_CONCAT(a, b) SL_FORMAT_CONCAT2(a, b)
#define SL_REGISTER_CLOUD_FORMAT(row_fn) \
  static const ::sl::CloudFormatRegistrar SL_FORMAT_CONCAT(sl_cloud_format_registrar_, __LINE__) { row_fn }

// Every row, by name.
std::vector<const CloudFormat*> cloud_formats();
std::vector<std::string> cloud_format_names();
std::vector<std::string> writable_cloud_format_names();  // those with a writer
// The row named `name`; throws sl::Error at `where` listing the formats when there is none.
const CloudFormat& cloud_format(const std::string& name, const std::string& where);
// The row whose extension `path` ends with (the longest: "a.pcd.bin" is nuScenes, not KITTI);
// null when none does.
const CloudFormat* format_of_path(const std::string& path);
// A file's stem without its format's extension ("scene_0001" for "dir/scene_0001.pcd.bin").
std::string cloud_stem(const std::string& path, const CloudFormat& f);
// ".bin, .pcd.bin, .pcd, .ply" (by format name): for messages.
std::string cloud_extensions_text();
// Writes `cloud` in `format` (its `write`), declaring `crs` where the format stores a CRS (LAS); a
// format that stores none (PCD, PLY, the raw binaries) writes the points alone.
void write_cloud(const CloudFormat& format, const std::string& path, const PointCloud& cloud, const CloudCrs& crs);
// Decodes `path` by its extension; throws sl::Error naming the file when no format has it.
PointCloud read_cloud_file(const std::string& path, const DecodeOptions& opt = {}, DecodeInfo* info = nullptr);

}  // namespace sl
