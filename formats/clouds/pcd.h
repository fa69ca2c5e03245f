// PCD (Point Cloud Data) files: our own reader and writer, independent of PCL.
//
// Reads VERSION .7 and .5, DATA ascii / binary / binary_compressed (LZF), any field set with
// TYPE I/U/F and SIZE 1/2/4/8 (F: 4/8), COUNT > 1, padding fields "_", organized clouds,
// '#' comments and CRLF line ends in the header. Output columns are float32, in the order the
// caller asks for, whatever the stored type.
//
// Every bad input is an sl::Error "<path>: <reason>" (with a header line or byte offset where it
// helps); nothing is allocated from a header value before it is checked against the file size.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "graph/message.h"
#include "formats/clouds/origin.h"

namespace sl {

struct PcdHeader {
  std::string version;              // as written: ".7", "0.7", ".5", ... ("" when absent)
  std::vector<std::string> fields;  // FIELDS, padding fields included as "_"
  std::vector<int> sizes;           // SIZE, bytes per element
  std::vector<char> types;          // TYPE: 'I', 'U' or 'F'
  std::vector<int> counts;          // COUNT, elements per field (1 when the header has none)
  int64_t width = 0, height = 0, points = 0;
  std::string viewpoint;            // VIEWPOINT as written ("" when absent, e.g. v0.5)
  std::string data;                 // "ascii" | "binary" | "binary_compressed"
  size_t data_offset = 0;           // byte offset where the data starts
};

// Parses and validates the header (field lists of equal length, valid TYPE/SIZE pairs,
// non-negative dimensions, POINTS == WIDTH * HEIGHT, known DATA). Throws sl::Error.
PcdHeader parse_pcd_header(const char* data, size_t size, const std::string& path);

struct PcdReadOptions {
  // Columns to produce, in this order. "name" selects element 0 of a field with COUNT > 1,
  // "name[k]" selects element k.
  std::vector<std::string> fields{"x", "y", "z", "intensity"};
  // Value for a requested field absent from the file; when unset, a missing field is an error.
  std::optional<float> missing_default;
  // Drop (and count) points where any of x, y, z is NaN or infinite (invalid points of
  // organized clouds). The check uses the file's x/y/z even when they are not requested.
  bool drop_nan = true;
  int64_t max_points = int64_t(1) << 31;  // POINTS above this is an error
  // The origin subtracted from output columns 0, 1, 2 -- the coordinates (formats/clouds/origin.h):
  // the stored values by default; the reader stages pass theirs (auto unless set). Coordinates
  // stored wider than float32 (F 8, 32/64-bit integers) are moved in double before they become
  // float32; the auto origin of such a file takes a first pass over its stored x, y, z.
  OriginPolicy origin = OriginPolicy::stored();
};

class MappedFile;

// Decodes a whole PCD file held in memory. `path` is only used in error messages. When the
// bytes are a MappedFile's, passing it lets the decoder release the pages it has read as it
// goes (a large binary tile is never in memory twice).
// *info: the points dropped and, for coordinates stored as float32, their extent (coarse()).
PointCloud parse_pcd(const char* data, size_t size, const std::string& path, const PcdReadOptions& opt,
                     int64_t* dropped_nan = nullptr, const MappedFile* mapped = nullptr, DecodeInfo* info = nullptr);
// Memory-maps `path` and decodes it.
PointCloud read_pcd(const std::string& path, const PcdReadOptions& opt, int64_t* dropped_nan = nullptr,
                    DecodeInfo* info = nullptr);

enum class PcdDataMode { Ascii, Binary, BinaryCompressed };
const char* pcd_data_mode_name(PcdDataMode m);  // "ascii", "binary", "binary_compressed"

// Writes every column as an F 4 field, VERSION 0.7, WIDTH = points, HEIGHT = 1, atomically
// (sl::write_file_atomic) -- except the coordinates of a cloud with an origin: x, y, z are then
// written as F 8 world coordinates, double(column) + origin. Ascii values use the shortest text that reads back to the same float.
// Throws sl::Error when columns and fields disagree in number or length, or a field name is
// empty or contains whitespace.
void write_pcd(const std::string& path, const PointCloud& cloud, PcdDataMode mode);

}  // namespace sl
