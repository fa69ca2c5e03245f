// LAS point clouds (.las), the ASPRS LiDAR exchange format, versions 1.0 to 1.4, read and
// written here to the specification (no LAS library is packaged for Debian 12).
//
// A file: the public header block (its size by version: 227 bytes for 1.0-1.2, 235 for 1.3, 375
// for 1.4; a larger "header size" is honoured), the variable-length records (VLRs, each a
// 54-byte header and its payload, skipped by their lengths), the point records from the
// header's "offset to point data", then in 1.4 the extended VLRs (EVLRs: 60-byte headers,
// 64-bit lengths). Every point record starts with X, Y, Z as int32 and the intensity as uint16
// at byte 12, whatever its format (0 to 10); a record longer than its format's size carries
// "extra bytes", which are skipped. World coordinates are X * scale + offset per axis (header
// doubles). The point count is the 1.4 header's 64-bit count (the legacy 32-bit one when that
// is 0: some writers fill only the legacy field), the legacy count before 1.4.
//
// Decoded: columns x, y, z (local: world - origin, formats/clouds/origin.h) and intensity / 65535
// (the 1.4 specification normalises intensities to 16 bits, so [0, 1] as the generated data
// and KITTI's reflectances; a file whose writer kept 8-bit values comes out in [0, 0.0039]).
// The local coordinate is computed as float(X * scale + (offset - origin)): with origin ==
// offset (the auto rule's first choice) that is float(X * scale) exactly rounded once.
//
// LAZ (LASzip-compressed LAS: the point format's bit 7 -- or 6 -- set, or a "laszip encoded"
// VLR) and COPC (LAZ 1.4 with a "copc" info VLR; its octree nodes are the LASzip chunks) are
// decoded by formats/clouds/laz.h into the same columns, their chunks on all threads; errors in
// the compressed data name the chunk and the byte.
//
// Every malformed header is an sl::Error "<path>: byte N: <reason>"; the point count is checked
// against the file size before anything is allocated.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "graph/message.h"
#include "formats/clouds/formats.h"
#include "formats/clouds/laz.h"
#include "formats/clouds/origin.h"

namespace sl {

// Bytes of a point record of formats 0..10 (without extra bytes).
constexpr uint16_t kLasRecordSize[11] = {20, 28, 26, 34, 57, 63, 30, 36, 38, 59, 67};

struct LasVlr {
  std::string user_id;    // up to 16 characters
  uint16_t record_id = 0;
  std::string payload;    // its bytes (a VLR holds at most 65535)
  std::string description;
};

struct LasHeader {
  int version_minor = 0;        // 1.version_minor
  uint16_t header_size = 0;
  uint32_t point_offset = 0;    // offset to point data
  uint32_t vlr_count = 0;
  uint8_t format_byte = 0;      // as stored (LAZ sets bit 7)
  int point_format = 0;         // format_byte without the compression bits
  uint16_t record_length = 0;
  uint32_t legacy_points = 0;
  uint64_t points = 0;          // the count used (see the top of this file)
  Vec3d scale{}, offset{}, min{}, max{};  // as stored (min/max: what the writer claims)
  uint64_t evlr_start = 0;      // 1.4
  uint32_t evlr_count = 0;      // 1.4
  std::string system_id, software;
  std::vector<std::pair<std::string, uint16_t>> vlrs, evlrs;  // user id, record id
  bool laz = false;             // LASzip-compressed points
  bool copc = false;            // a COPC file (LAZ too)
  // The coordinate reference system the file declares in its LASF_Projection records (VLRs or
  // EVLRs): GeoTIFF keys (record 34735: GTModelTypeGeoKey 1024, ProjectedCSTypeGeoKey 3072,
  // GeographicTypeGeoKey 2048, VerticalCSTypeGeoKey 4096, values inline as EPSG codes; 32767
  // "user-defined" is no code) or OGC WKT (record 2112, LAS 1.4's way). Both present: the WKT.
  struct Crs {
    std::string source;      // "" (none declared) | "GeoTIFF keys" | "WKT"
    int epsg = 0;            // the projected CRS's EPSG code, else the geographic one's; 0: none or user-defined
    bool geographic = false; // the code is a geographic (lat/lon) CRS
    int vertical_epsg = 0;   // GeoTIFF VerticalCSTypeGeoKey (a WKT's vertical part is not read: 0)
    std::string name;        // WKT: its own name (PROJCS["..."], PROJCRS["..."], ...)
    std::string wkt;         // WKT: as written
  } crs;
};

// "EPSG:32617 (GeoTIFF keys)", "EPSG:3645 (GeoTIFF keys; vertical EPSG:5703)",
// "WKT \"WGS 84 / UTM zone 17N\" (EPSG:32617)", "none declared".
std::string describe_crs(const LasHeader::Crs& crs);

// The header and the VLR/EVLR walk, validated against the file size (for a LAZ file the
// compressed point data is checked when it is decoded). Throws sl::Error "<path>: byte N: <reason>".
LasHeader parse_las_header(const char* data, size_t size, const std::string& path);

// A LAZ file's LASzip VLR (its items checked against the header's point format and record
// length) and where its chunks lie (formats/clouds/laz.h): what the reader decodes, and what
// inspect shows. Throws sl::Error naming the byte (and the chunk).
struct LasLaz {
  LazInfo info;
  LazChunks chunks;
};
LasLaz las_laz(const char* data, size_t size, const LasHeader& h, const std::string& path);

// The whole file (LAS, LAZ or COPC): columns x, y, z, intensity. Throws sl::Error. With the
// file's mapping, its pages are released as they are decoded.
class MappedFile;
PointCloud parse_las(const char* data, size_t size, const std::string& path, const DecodeOptions& opt,
                     DecodeInfo* info = nullptr, const MappedFile* mapped = nullptr);
PointCloud read_las(const std::string& path, const DecodeOptions& opt = {}, DecodeInfo* info = nullptr);

// The auto origin of a LAS file whose points' world bounds are `world` (formats/clouds/origin.h):
// the offset when every point lies within kLasOffsetReach of it on every axis, else the grid
// origin of the bounds.
Vec3d las_auto_origin(const Vec3d& offset, const Bounds& world);

struct LasWriteOptions {
  int version_minor = 4;                  // 0..4
  int point_format = 6;                   // 0..10, allowed by the version (6..10 need 1.4, 4..5 1.3, 2..3 1.2)
  Vec3d scale{0.001, 0.001, 0.001};
  bool auto_offset = true;                // offset = the grid origin of the points' world bounds
  Vec3d offset{0, 0, 0};                  // used when !auto_offset
  uint16_t extra_bytes = 0;               // per record, after the format's fields (written as zeros)
  uint16_t header_padding = 0;            // bytes after the standard header, counted in its size
  std::vector<LasVlr> vlrs, evlrs;        // EVLRs: 1.4 only
  bool legacy_count = true;               // 1.4 with formats 0..5: also fill the legacy counts
};

// The LASF_Projection records that declare `crs` in a file of this version and point format, as the
// LAS 1.4 (R15) specification section 2.5 gives them: LAS 1.4 an OGC WKT record (2112, the WKT and
// its terminating NUL; formats 6-10 must use WKT, and las_bytes sets the global encoding's WKT bit
// whenever one is written); LAS 1.0-1.3 a GeoKeyDirectory (34735: GTModelType projected,
// GTRasterType PixelIsArea, ProjectedCSType the EPSG code, ProjLinearUnits metre). Throws sl::Error
// naming `path` when the CRS lacks what the version needs (a WKT for 1.4, a code up to 65535 before).
std::vector<LasVlr> las_crs_vlrs(const CloudCrs& crs, int version_minor, const std::string& path);

// The bytes of a LAS file holding `cloud` (world coordinates: column + cloud.origin; intensity
// clamped to [0, 1] and scaled to 0..65535): every point a single return, other fields zero.
// Throws sl::Error (naming `path`) when a coordinate does not fit int32 at the scale, or the
// options contradict the specification.
std::string las_bytes(const std::string& path, const PointCloud& cloud, const LasWriteOptions& opt = {});
// las_bytes written atomically.
void write_las(const std::string& path, const PointCloud& cloud, const LasWriteOptions& opt = {});

}  // namespace sl
