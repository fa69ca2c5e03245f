// PLY point clouds (.ply): format ascii 1.0 and binary_little_endian 1.0. The "vertex" element's
// x, y, z and an optional intensity -- the first of the properties "intensity",
// "scalar_intensity", "scalar" -- become columns x, y, z, intensity (0 when the file has none).
// Any scalar property type is read (char .. double, int8 .. float64); other elements (faces,
// edges) are skipped, and an element with a list property may follow the vertices (a mesh), or
// precede them in an ascii file. Big-endian files are refused with a clear error.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "graph/message.h"
#include "formats/clouds/origin.h"

namespace sl {

struct PlyInfo {
  bool binary = false;
  int64_t vertices = 0;
  std::string intensity;  // the property read as intensity ("" when none)
};

// The header alone (for counting a dataset without decoding it). Throws sl::Error naming `name`,
// the byte offset and the reason.
PlyInfo parse_ply_header(const char* data, size_t size, const std::string& name);

// Decodes the whole file. Points with a non-finite x, y or z are dropped (counted in *dropped)
// when drop_nan. Throws sl::Error naming `name`, the byte offset and the reason for: no PLY
// magic, an unknown format or type, no vertex element or no x/y/z, a list property inside the
// vertex element, a vertex count the file cannot hold (refused before allocating), a truncated
// body, a malformed or missing number in an ascii line.
// x, y, z are moved to the origin opt.origin gives (formats/clouds/origin.h): coordinates stored as
// double or 32-bit integers in double, before they become float32.
PointCloud parse_ply(const char* data, size_t size, const std::string& name, const DecodeOptions& opt,
                     DecodeInfo* info);
PointCloud read_ply(const std::string& path, const DecodeOptions& opt, DecodeInfo* info);
// The stored values (origin {0, 0, 0}).
PointCloud parse_ply(const char* data, size_t size, const std::string& name, bool drop_nan = true,
                     int64_t* dropped = nullptr);
PointCloud read_ply(const std::string& path, bool drop_nan = true, int64_t* dropped = nullptr);

// Writes x, y, z, intensity (0 without an intensity field) as float properties, ascii or binary
// little-endian, atomically -- x, y, z of a cloud with an origin as double world coordinates,
// column + origin. Throws sl::Error when x, y or z is missing.
void write_ply(const std::string& path, const PointCloud& cloud, bool binary);

}  // namespace sl
