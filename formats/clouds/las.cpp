#include "formats/clouds/las.h"

#include <algorithm>
#include <bit>
#include <cctype>
#include <cmath>
#include <cstring>
#include <exception>
#include <limits>

#include <tbb/parallel_for.h>

#include "graph/atomic_file.h"
#include "graph/error.h"
#include "graph/parallel.h"
#include "formats/clouds/formats.h"
#include "formats/clouds/laz.h"
#include "formats/clouds/mapped_file.h"

namespace sl {

static_assert(std::endian::native == std::endian::little, "LAS is little-endian");

namespace {

// The size of the public header block by minor version (1.0-1.2: 227, 1.3: 235, 1.4: 375).
uint16_t header_size_of(int minor) { return minor <= 2 ? 227 : minor == 3 ? 235 : 375; }

constexpr size_t kVlrHeader = 54, kEvlrHeader = 60;
// Points above this are refused: columns and the crop's point ids are 32-bit.
constexpr uint64_t kMaxPoints = uint64_t(1) << 31;

template <class T>
T get(const char* p, size_t off) {
  T v;
  std::memcpy(&v, p + off, sizeof v);
  return v;
}

template <class T>
void put(std::string& s, size_t off, T v) {
  std::memcpy(s.data() + off, &v, sizeof v);
}

// A fixed-size character field up to its first NUL.
std::string text_at(const char* p, size_t off, size_t n) {
  const char* b = p + off;
  return std::string(b, strnlen(b, n));
}

[[noreturn]] void bad(const std::string& path, uint64_t at, const std::string& why) {
  fail(path, "byte " + std::to_string(at) + ": " + why);
}

const char* axis_name(int a) { return a == 0 ? "x" : a == 1 ? "y" : "z"; }

// The LASzip VLR of a LAZ file (its items checked against the point format).
LazInfo laz_vlr(const char* d, const LasHeader& h, const std::string& path) {
  uint64_t pos = h.header_size;
  for (uint32_t k = 0; k < h.vlr_count; ++k) {  // (parse_las_header checked the walk)
    const uint16_t len = get<uint16_t>(d, size_t(pos) + 20);
    if (text_at(d, size_t(pos) + 2, 16) == kLazVlrUser && get<uint16_t>(d, size_t(pos) + 18) == kLazVlrRecord) {
      const uint64_t at = pos + kVlrHeader;
      LazInfo info = parse_laz_vlr(d + at, len, path, at);
      check_laz_items(info, h.point_format, h.record_length, path, at);
      return info;
    }
    pos += kVlrHeader + len;
  }
  bad(path, 104, "the point format byte " + std::to_string(h.format_byte) +
                     " marks the points as LASzip-compressed, but the file has no LASzip VLR ('laszip encoded' 22204)");
}

// GeoTIFF's GeoKeyDirectoryTag (LAS's 'LASF_Projection' 34735): uint16 words, a 4-word header
// (KeyDirectoryVersion 1, KeyRevision, MinorRevision, NumberOfKeys) then 4 words per key (KeyID,
// TIFFTagLocation, Count, Value_Offset; location 0: the value is the 4th word).
void read_geokeys(const char* d, uint64_t at, uint64_t len, LasHeader::Crs* crs, const std::string& path) {
  if (len < 8) bad(path, at, "GeoKeyDirectory (LASF_Projection 34735): " + std::to_string(len) + " bytes, not even its 8-byte header");
  const uint16_t keys = get<uint16_t>(d, size_t(at) + 6);
  if (8 + uint64_t(keys) * 8 > len)
    bad(path, at + 6, "GeoKeyDirectory (LASF_Projection 34735): " + std::to_string(keys) + " keys do not fit its " +
                          std::to_string(len) + " bytes");
  int model = 0, projected = 0, geographic = 0, vertical = 0;
  for (uint16_t k = 0; k < keys; ++k) {
    const size_t e = size_t(at) + 8 + 8 * size_t(k);
    const uint16_t id = get<uint16_t>(d, e), location = get<uint16_t>(d, e + 2), value = get<uint16_t>(d, e + 6);
    if (location != 0) continue;  // a double or ASCII parameter: not a code
    if (id == 1024) model = value;
    if (id == 3072) projected = value;
    if (id == 2048) geographic = value;
    if (id == 4096) vertical = value;
  }
  auto code = [](int v) { return v > 0 && v < 32767 ? v : 0; };  // 32767: user-defined
  crs->source = "GeoTIFF keys";
  crs->epsg = code(projected) ? code(projected) : code(geographic);
  crs->geographic = !code(projected) && (code(geographic) || model == 2);
  crs->vertical_epsg = code(vertical);
}

// OGC WKT (LAS's 'LASF_Projection' 2112): its own name, and its EPSG code when the outermost
// object carries one (WKT1 AUTHORITY["EPSG","n"], WKT2 ID["EPSG",n] just before its closing ']').
void read_wkt(const char* d, uint64_t at, uint64_t len, LasHeader::Crs* crs) {
  *crs = {};
  std::string w(d + at, size_t(len));
  while (!w.empty() && (w.back() == '\0' || std::isspace((unsigned char)w.back()))) w.pop_back();
  crs->source = "WKT";
  crs->wkt = w;
  const size_t open = w.find('[');
  if (open != std::string::npos) {
    const std::string kind = w.substr(0, open);
    crs->geographic = kind == "GEOGCS" || kind == "GEOGCRS" || kind == "GEODCRS";
    const size_t q0 = w.find('"', open), q1 = q0 == std::string::npos ? q0 : w.find('"', q0 + 1);
    if (q1 != std::string::npos) crs->name = w.substr(q0 + 1, q1 - q0 - 1);
  }
  size_t end = w.size();
  if (end > 0 && w[end - 1] == ']') --end;  // the outermost object's closing bracket
  while (end > 0 && std::isspace((unsigned char)w[end - 1])) --end;
  if (end == 0 || w[end - 1] != ']') return;
  size_t id = std::string::npos;
  for (const char* key : {"AUTHORITY[", "ID["}) {
    const size_t at = w.rfind(key, end);
    if (at != std::string::npos && (id == std::string::npos || at > id)) id = at;
  }
  if (id == std::string::npos || w.find(']', id) != end - 1) return;
  const std::string inner = w.substr(id, end - id);
  const size_t epsg = inner.find("\"EPSG\"");
  if (epsg == std::string::npos) return;
  size_t i = inner.find(',', epsg);
  if (i == std::string::npos) return;
  ++i;
  while (i < inner.size() && (inner[i] == ' ' || inner[i] == '"')) ++i;
  int v = 0;
  while (i < inner.size() && std::isdigit((unsigned char)inner[i])) v = v * 10 + (inner[i++] - '0');
  crs->epsg = v;
}

void read_crs_record(const char* d, const std::string& user, uint16_t id, uint64_t at, uint64_t len, LasHeader* h,
                     const std::string& path) {
  if (user != "LASF_Projection") return;
  if (id == 2112) read_wkt(d, at, len, &h->crs);
  if (id == 34735 && h->crs.source != "WKT") read_geokeys(d, at, len, &h->crs, path);
}

}  // namespace

std::string describe_crs(const LasHeader::Crs& c) {
  if (c.source.empty()) return "none declared";
  std::string code = c.epsg ? "EPSG:" + std::to_string(c.epsg) : std::string("no EPSG code");
  if (c.source == "WKT") return "WKT \"" + c.name + "\" (" + code + ")";
  return code + (c.geographic ? " (geographic)" : "") + " (GeoTIFF keys" +
         (c.vertical_epsg ? "; vertical EPSG:" + std::to_string(c.vertical_epsg) : std::string()) + ")";
}

LasLaz las_laz(const char* d, size_t size, const LasHeader& h, const std::string& path) {
  LasLaz z;
  z.info = laz_vlr(d, h, path);
  // The compressed points end at the EVLRs (LAS 1.4), else at the end of the file.
  const uint64_t end = h.version_minor == 4 && h.evlr_count > 0 && h.evlr_start > h.point_offset ? h.evlr_start : size;
  z.chunks = laz_chunks(d, size, z.info, h.point_offset, h.points, h.record_length, end, path);
  return z;
}

LasHeader parse_las_header(const char* d, size_t size, const std::string& path) {
  if (size < 4 || std::memcmp(d, "LASF", 4) != 0) bad(path, 0, "not a LAS file (it does not start with \"LASF\")");
  if (size < 227)
    bad(path, size, "truncated header: a LAS header has at least 227 bytes, the file has " + std::to_string(size));
  LasHeader h;
  const int major = get<uint8_t>(d, 24), minor = get<uint8_t>(d, 25);
  if (major != 1 || minor > 4)
    bad(path, 24, "unsupported LAS version " + std::to_string(major) + "." + std::to_string(minor) +
                      " (versions 1.0 to 1.4 are read)");
  h.version_minor = minor;
  h.system_id = text_at(d, 26, 32);
  h.software = text_at(d, 58, 32);
  h.header_size = get<uint16_t>(d, 94);
  const uint16_t need = header_size_of(minor);
  if (h.header_size < need)
    bad(path, 94, "header size " + std::to_string(h.header_size) + " is smaller than the " + std::to_string(need) +
                      " bytes of a LAS 1." + std::to_string(minor) + " header");
  if (h.header_size > size)
    bad(path, 94, "header size " + std::to_string(h.header_size) + " runs past the end of the file (" +
                      std::to_string(size) + " bytes)");
  h.point_offset = get<uint32_t>(d, 96);
  if (h.point_offset < h.header_size)
    bad(path, 96, "offset to point data " + std::to_string(h.point_offset) + " lies inside the header (" +
                      std::to_string(h.header_size) + " bytes)");
  if (h.point_offset > size)
    bad(path, 96, "offset to point data " + std::to_string(h.point_offset) + " is past the end of the file (" +
                      std::to_string(size) + " bytes)");
  h.vlr_count = get<uint32_t>(d, 100);
  h.format_byte = get<uint8_t>(d, 104);
  // LASzip marks compressed points by setting bit 7 of the format (early versions bit 6).
  h.laz = (h.format_byte & 0xC0) != 0;
  h.point_format = h.format_byte & 0x3F;
  h.record_length = get<uint16_t>(d, 105);
  h.legacy_points = get<uint32_t>(d, 107);
  for (int a = 0; a < 3; ++a) {
    h.scale[size_t(a)] = get<double>(d, 131 + 8 * size_t(a));
    h.offset[size_t(a)] = get<double>(d, 155 + 8 * size_t(a));
    h.max[size_t(a)] = get<double>(d, 179 + 16 * size_t(a));
    h.min[size_t(a)] = get<double>(d, 187 + 16 * size_t(a));
    if (!std::isfinite(h.scale[size_t(a)]) || h.scale[size_t(a)] == 0)
      bad(path, 131 + 8 * uint64_t(a),
          std::string(axis_name(a)) + " scale factor " + exact_number(h.scale[size_t(a)]) + " is not a finite non-zero number");
    if (!std::isfinite(h.offset[size_t(a)]))
      bad(path, 155 + 8 * uint64_t(a), std::string(axis_name(a)) + " offset is not a finite number");
  }
  h.points = h.legacy_points;
  if (minor == 4) {
    h.evlr_start = get<uint64_t>(d, 235);
    h.evlr_count = get<uint32_t>(d, 243);
    const uint64_t count64 = get<uint64_t>(d, 247);
    if (count64 != 0) h.points = count64;  // 0 with a legacy count: a writer that filled only that
  }

  // The VLRs, each skipped by its own length, between the header and the point data.
  uint64_t pos = h.header_size;
  for (uint32_t k = 0; k < h.vlr_count; ++k) {
    const std::string which = "VLR " + std::to_string(k + 1) + " of " + std::to_string(h.vlr_count);
    if (h.point_offset - pos < kVlrHeader)
      bad(path, pos, which + ": its 54-byte header runs past the offset to point data (byte " +
                         std::to_string(h.point_offset) + ")");
    const std::string user = text_at(d, size_t(pos) + 2, 16);
    const uint16_t id = get<uint16_t>(d, size_t(pos) + 18), len = get<uint16_t>(d, size_t(pos) + 20);
    if (len > h.point_offset - pos - kVlrHeader)
      bad(path, pos + 20, which + " ('" + user + "' " + std::to_string(id) + "): its " + std::to_string(len) +
                              " bytes run past the offset to point data (byte " + std::to_string(h.point_offset) + ")");
    h.vlrs.emplace_back(user, id);
    read_crs_record(d, user, id, pos + kVlrHeader, len, &h, path);
    if (user == "laszip encoded" && id == 22204) h.laz = true;
    if (user == "copc" && id == 1) h.copc = true;
    pos += kVlrHeader + len;
  }

  if (!h.laz) {
    if (h.point_format > 10)
      bad(path, 104, "unknown point data record format " + std::to_string(h.point_format) + " (0 to 10 are defined)");
    const uint16_t rec = kLasRecordSize[h.point_format];
    if (h.record_length < rec)
      bad(path, 105, "point record length " + std::to_string(h.record_length) + " is shorter than the " +
                         std::to_string(rec) + " bytes of point format " + std::to_string(h.point_format));
    // Before anything is allocated: the declared points must be in the file.
    const uint64_t avail = size - h.point_offset;
    if (h.points > avail / h.record_length)
      bad(path, h.point_offset,
          "the header declares " + std::to_string(h.points) + " points of " + std::to_string(h.record_length) +
              " bytes, but the file has " + std::to_string(avail) + " bytes from the point data on (truncated?)");
  }

  // The EVLRs (1.4), after the point records, each skipped by its 64-bit length.
  if (minor == 4 && h.evlr_count > 0) {
    const uint64_t points_end = h.laz ? h.point_offset : h.point_offset + h.points * h.record_length;
    if (h.evlr_start < points_end)
      bad(path, 235, "start of the first EVLR " + std::to_string(h.evlr_start) + " lies before the end of the point data (byte " +
                         std::to_string(points_end) + ")");
    if (h.evlr_start > size)
      bad(path, 235, "start of the first EVLR " + std::to_string(h.evlr_start) + " is past the end of the file (" +
                         std::to_string(size) + " bytes)");
    pos = h.evlr_start;
    for (uint32_t k = 0; k < h.evlr_count; ++k) {
      const std::string which = "EVLR " + std::to_string(k + 1) + " of " + std::to_string(h.evlr_count);
      if (size - pos < kEvlrHeader)
        bad(path, pos, which + ": its 60-byte header runs past the end of the file (" + std::to_string(size) + " bytes)");
      const std::string user = text_at(d, size_t(pos) + 2, 16);
      const uint16_t id = get<uint16_t>(d, size_t(pos) + 18);
      const uint64_t len = get<uint64_t>(d, size_t(pos) + 20);
      if (len > size - pos - kEvlrHeader)
        bad(path, pos + 20, which + " ('" + user + "' " + std::to_string(id) + "): its " + std::to_string(len) +
                                " bytes run past the end of the file (" + std::to_string(size) + " bytes)");
      h.evlrs.emplace_back(user, id);
      read_crs_record(d, user, id, pos + kEvlrHeader, len, &h, path);
      pos += kEvlrHeader + len;
    }
  }
  return h;
}

Vec3d las_auto_origin(const Vec3d& offset, const Bounds& world) {
  bool near = true;
  for (int a = 0; a < 3; ++a)
    if (world.has(a))
      near = near && std::max(std::fabs(world.lo[size_t(a)] - offset[size_t(a)]),
                              std::fabs(world.hi[size_t(a)] - offset[size_t(a)])) <= kLasOffsetReach;
  return near ? offset : grid_origin(world);
}

PointCloud parse_las(const char* d, size_t size, const std::string& path, const DecodeOptions& opt, DecodeInfo* info,
                     const MappedFile* mapped) {
  const LasHeader h = parse_las_header(d, size, path);
  if (h.points > kMaxPoints)
    fail(path, std::to_string(h.points) + " points exceed the limit of " + std::to_string(kMaxPoints));
  const size_t n = size_t(h.points), L = h.record_length;
  // LAZ: the chunks are found (and their counts checked against their bytes) before anything
  // is allocated.
  LasLaz laz;
  if (h.laz) laz = las_laz(d, size, h, path);
  const LazChunks& chunks = laz.chunks;

  PointCloud cloud;
  cloud.fields = {"x", "y", "z", "intensity"};
  cloud.columns.assign(4, std::vector<float>(n));
  float* col[4] = {cloud.columns[0].data(), cloud.columns[1].data(), cloud.columns[2].data(), cloud.columns[3].data()};
  // X, Y, Z go into the columns as their int32 bits first (one pass over the file, the integer
  // bounds on the way); they become local floats once the origin is known. Both passes run in
  // parts on all threads (graph/parallel.h); each part's file pages are released once read.
  struct IntBox {
    int32_t lo[3] = {INT32_MAX, INT32_MAX, INT32_MAX}, hi[3] = {INT32_MIN, INT32_MIN, INT32_MIN};
  };
  std::vector<IntBox> boxes;
  // Records [i0, i1) at `r` into the columns, their box into b.
  auto take = [&](const char* r, size_t i0, size_t i1, IntBox& b) {
    for (size_t i = i0; i < i1; ++i, r += L) {
      int32_t xyz[3];
      std::memcpy(xyz, r, 12);
      for (int a = 0; a < 3; ++a) {
        b.lo[a] = std::min(b.lo[a], xyz[a]), b.hi[a] = std::max(b.hi[a], xyz[a]);
        std::memcpy(col[a] + i, &xyz[a], 4);
      }
      col[3][i] = float(get<uint16_t>(r, 12)) / 65535.f;
    }
  };
  if (!h.laz) {
    const char* base = d + h.point_offset;
    boxes.resize(part_count(n));
    parallel_parts(n, [&](size_t i0, size_t i1) {
      take(base + i0 * L, i0, i1, boxes[i0 / kPartSize]);
      if (mapped) mapped->release_range(h.point_offset + i0 * L, h.point_offset + i1 * L);
    });
  } else {
    // LAZ chunks decode independently: those of the chunk table on all threads (oneTBB), each
    // into its points' rows, a block of records at a time; those after a missing table's walk
    // one after the other. The first failing chunk (in file order) is the error reported.
    boxes.resize(chunks.chunks.size());
    auto decode = [&](size_t k, const LazChunk& c) {
      constexpr uint64_t kBlock = 4096;
      LazChunkDecoder dec(d, size, laz.info, c, k, h.record_length, path);
      std::vector<uint8_t> buf(size_t(std::min(kBlock, c.points)) * L);
      for (uint64_t i = 0; i < c.points; i += kBlock) {
        const uint64_t m = std::min(kBlock, c.points - i);
        dec.read(buf.data(), m);
        take(reinterpret_cast<const char*>(buf.data()), size_t(c.first_point + i), size_t(c.first_point + i + m), boxes[k]);
      }
      if (mapped && k < chunks.tabled) mapped->release_range(c.start, c.end);
      return dec.end();
    };
    std::vector<std::exception_ptr> failed(chunks.tabled);
    tbb::parallel_for(size_t(0), chunks.tabled, [&](size_t k) {
      try {
        decode(k, chunks.chunks[k]);
      } catch (...) {
        failed[k] = std::current_exception();
      }
    });
    for (const std::exception_ptr& e : failed)
      if (e) std::rethrow_exception(e);
    uint64_t next = chunks.tabled ? chunks.chunks[chunks.tabled - 1].end : 0;
    for (size_t k = chunks.tabled; k < chunks.chunks.size(); ++k) {
      LazChunk c = chunks.chunks[k];
      if (k > 0) c.start = next;
      if (c.start >= c.end)
        fail(path, "chunk " + std::to_string(k) + ": byte " + std::to_string(c.start) + ": the point data ends (byte " +
                       std::to_string(c.end) + ") before the chunk (the chunk table is missing: the chunks are found one after the other)");
      next = decode(k, c);
    }
  }
  int32_t lo[3] = {INT32_MAX, INT32_MAX, INT32_MAX}, hi[3] = {INT32_MIN, INT32_MIN, INT32_MIN};
  for (const IntBox& b : boxes)
    for (int a = 0; a < 3; ++a) lo[a] = std::min(lo[a], b.lo[a]), hi[a] = std::max(hi[a], b.hi[a]);
  Bounds world;
  if (n > 0) {
    world.points = int64_t(n);
    for (size_t a = 0; a < 3; ++a) {
      const double p = double(lo[a]) * h.scale[a] + h.offset[a], q = double(hi[a]) * h.scale[a] + h.offset[a];
      if (!std::isfinite(p) || !std::isfinite(q))
        bad(path, 131 + 8 * a, std::string(axis_name(int(a))) + " scale factor " + exact_number(h.scale[a]) +
                                   " times the stored coordinates overflows a double");
      world.lo[a] = std::min(p, q), world.hi[a] = std::max(p, q);  // a negative scale swaps them
    }
  }
  cloud.origin = opt.origin.automatic ? las_auto_origin(h.offset, world) : opt.origin.fixed;
  std::vector<char> part_finite(part_count(n), 1);
  parallel_parts(n, [&](size_t i0, size_t i1) {
    bool all = true;
    for (size_t a = 0; a < 3; ++a) {
      // X * scale + offset - origin, as X * scale + (offset - origin): with origin == offset it is
      // X * scale rounded once, and the same scene stored with another offset gives the same floats.
      const double s = h.scale[a], shift = h.offset[a] - cloud.origin[a];
      float* c = col[a];
      for (size_t i = i0; i < i1; ++i) {
        int32_t X;
        std::memcpy(&X, c + i, 4);
        const double v = double(X) * s + shift;
        const bool fits = std::fabs(v) <= double(std::numeric_limits<float>::max());
        c[i] = fits ? float(v) : v > 0 ? INFINITY : -INFINITY;  // (NaN: v from a NaN origin)
        all = all && fits;
      }
    }
    part_finite[i0 / kPartSize] = all;
  });
  const bool all_finite = std::all_of(part_finite.begin(), part_finite.end(), [](char f) { return f != 0; });
  // Coordinates beyond float32 (a huge scale, or an origin far from the data) are dropped as
  // the other readers drop non-finite points.
  size_t kept = n;
  if (!all_finite && opt.drop_nan) {
    kept = 0;
    for (size_t i = 0; i < n; ++i) {
      if (!(std::isfinite(col[0][i]) && std::isfinite(col[1][i]) && std::isfinite(col[2][i]))) continue;
      for (int k = 0; k < 4; ++k) col[k][kept] = col[k][i];
      ++kept;
    }
    for (auto& c : cloud.columns) c.resize(kept);
  }
  if (info) *info = DecodeInfo{int64_t(n - kept), 0};
  return cloud;
}

PointCloud read_las(const std::string& path, const DecodeOptions& opt, DecodeInfo* info) {
  MappedFile f(path);
  return parse_las(f.data(), f.size(), path, opt, info, &f);
}

// ---- writer -----------------------------------------------------------------------------------

std::string las_bytes(const std::string& path, const PointCloud& cloud, const LasWriteOptions& opt) {
  const int minor = opt.version_minor, fmt = opt.point_format;
  if (minor < 0 || minor > 4) fail(path, "LAS version 1." + std::to_string(minor) + " cannot be written (1.0 to 1.4)");
  if (fmt < 0 || fmt > 10) fail(path, "point format " + std::to_string(fmt) + " does not exist (0 to 10)");
  const int min_minor = fmt >= 6 ? 4 : fmt >= 4 ? 3 : fmt >= 2 ? 2 : 0;
  if (minor < min_minor)
    fail(path, "point format " + std::to_string(fmt) + " needs LAS 1." + std::to_string(min_minor) + " or later");
  if (!opt.evlrs.empty() && minor < 4) fail(path, "EVLRs need LAS 1.4");
  const std::vector<float>* c[4] = {nullptr, nullptr, nullptr, nullptr};
  const char* names[4] = {"x", "y", "z", "intensity"};
  for (size_t f = 0; f < cloud.fields.size(); ++f)
    for (int k = 0; k < 4; ++k)
      if (cloud.fields[f] == names[k]) c[k] = &cloud.columns[f];
  for (int k = 0; k < 3; ++k)
    if (!c[k]) fail(path, std::string("cannot write a LAS file: the cloud has no field '") + names[k] + "'");
  const size_t n = c[0]->size();
  for (int a = 0; a < 3; ++a)
    if (!(std::isfinite(opt.scale[size_t(a)]) && opt.scale[size_t(a)] > 0))
      fail(path, std::string(axis_name(a)) + " scale must be a positive number");

  // World coordinates, and the offset: by default the grid origin of their bounds, so that the
  // auto origin of the file read back is that offset (formats/clouds/origin.h).
  Bounds world;
  for (size_t i = 0; i < n; ++i)
    world.add(to_world((*c[0])[i], cloud.origin[0]), to_world((*c[1])[i], cloud.origin[1]),
              to_world((*c[2])[i], cloud.origin[2]));
  const Vec3d offset = opt.auto_offset ? grid_origin(world) : opt.offset;

  const uint16_t rec = uint16_t(kLasRecordSize[fmt] + opt.extra_bytes);
  if (rec < kLasRecordSize[fmt]) fail(path, "extra bytes make the record longer than 65535 bytes");
  const size_t header = size_t(header_size_of(minor)) + opt.header_padding;
  if (header > 65535) fail(path, "header padding makes the header longer than 65535 bytes");
  size_t vlr_bytes = 0;
  for (const LasVlr& v : opt.vlrs) {
    if (v.payload.size() > 65535) fail(path, "a VLR holds at most 65535 bytes");
    if (v.user_id.size() > 16 || v.description.size() > 32) fail(path, "a VLR's user id has 16 characters at most, its description 32");
    vlr_bytes += kVlrHeader + v.payload.size();
  }
  const size_t point_offset = header + vlr_bytes + (minor == 0 ? 2 : 0);  // 1.0: the 0xCCDD signature
  if (point_offset > UINT32_MAX) fail(path, "the VLRs are too large");
  if (minor < 4 && n > UINT32_MAX) fail(path, "more than 2^32 - 1 points need LAS 1.4");
  size_t evlr_bytes = 0;
  for (const LasVlr& v : opt.evlrs) evlr_bytes += kEvlrHeader + v.payload.size();

  std::string out(point_offset + n * rec + evlr_bytes, '\0');
  std::memcpy(out.data(), "LASF", 4);
  bool wkt = false;  // a WKT CRS record: the global encoding says so (LAS 1.4 R15, 2.5)
  for (const auto* list : {&opt.vlrs, &opt.evlrs})
    for (const LasVlr& v : *list) wkt |= v.user_id == "LASF_Projection" && v.record_id == 2112;
  if (minor == 4 && (fmt >= 6 || wkt)) put<uint16_t>(out, 6, 0x10);  // global encoding: WKT (required for formats 6-10)
  put<uint8_t>(out, 24, 1);
  put<uint8_t>(out, 25, uint8_t(minor));
  std::memcpy(out.data() + 26, "streamline", 10);
  std::memcpy(out.data() + 58, "streamline", 10);
  put<uint16_t>(out, 94, uint16_t(header));
  put<uint32_t>(out, 96, uint32_t(point_offset));
  put<uint32_t>(out, 100, uint32_t(opt.vlrs.size()));
  put<uint8_t>(out, 104, uint8_t(fmt));
  put<uint16_t>(out, 105, rec);
  const bool legacy = minor < 4 || (fmt < 6 && opt.legacy_count && n <= UINT32_MAX);
  if (legacy) {
    put<uint32_t>(out, 107, uint32_t(n));
    put<uint32_t>(out, 111, uint32_t(n));  // every point is a first return
  }
  for (int a = 0; a < 3; ++a) {
    put<double>(out, 131 + 8 * size_t(a), opt.scale[size_t(a)]);
    put<double>(out, 155 + 8 * size_t(a), offset[size_t(a)]);
  }
  if (minor == 4) {
    put<uint64_t>(out, 235, opt.evlrs.empty() ? 0 : uint64_t(point_offset + n * rec));
    put<uint32_t>(out, 243, uint32_t(opt.evlrs.size()));
    put<uint64_t>(out, 247, uint64_t(n));
    put<uint64_t>(out, 255, uint64_t(n));
  }
  size_t pos = header;
  for (const LasVlr& v : opt.vlrs) {
    put<uint16_t>(out, pos, minor == 0 ? 0xAABB : 0);  // LAS 1.0's record signature, reserved later
    std::memcpy(out.data() + pos + 2, v.user_id.data(), v.user_id.size());
    put<uint16_t>(out, pos + 18, v.record_id);
    put<uint16_t>(out, pos + 20, uint16_t(v.payload.size()));
    std::memcpy(out.data() + pos + 22, v.description.data(), v.description.size());
    if (!v.payload.empty()) std::memcpy(out.data() + pos + kVlrHeader, v.payload.data(), v.payload.size());
    pos += kVlrHeader + v.payload.size();
  }
  if (minor == 0) put<uint16_t>(out, pos, 0xCCDD);

  int32_t lo[3] = {INT32_MAX, INT32_MAX, INT32_MAX}, hi[3] = {INT32_MIN, INT32_MIN, INT32_MIN};
  for (size_t i = 0; i < n; ++i) {
    char* r = out.data() + point_offset + i * rec;
    for (int a = 0; a < 3; ++a) {
      const double w = to_world((*c[a])[i], cloud.origin[size_t(a)]);
      const double q = std::nearbyint((w - offset[size_t(a)]) / opt.scale[size_t(a)]);
      if (!(q >= double(INT32_MIN) && q <= double(INT32_MAX)))
        fail(path, "point " + std::to_string(i) + ": " + axis_name(a) + " = " + exact_number(w) +
                       " does not fit a LAS int32 at scale " + exact_number(opt.scale[size_t(a)]) + " and offset " +
                       exact_number(offset[size_t(a)]));
      const int32_t X = int32_t(q);
      lo[a] = std::min(lo[a], X), hi[a] = std::max(hi[a], X);
      std::memcpy(r + 4 * a, &X, 4);
    }
    const float in = c[3] ? (*c[3])[i] : 0.f;
    const uint16_t I = uint16_t(std::lround(std::clamp(std::isfinite(in) ? in : 0.f, 0.f, 1.f) * 65535.f));
    std::memcpy(r + 12, &I, 2);
    r[14] = fmt >= 6 ? char(0x11) : char(0x09);  // return 1 of 1
    const double t = double(i);                  // GPS time: the point's index
    if (fmt == 1 || fmt == 3 || fmt == 4 || fmt == 5) std::memcpy(r + 20, &t, 8);
    if (fmt >= 6) std::memcpy(r + 22, &t, 8);
  }
  for (int a = 0; a < 3 && n > 0; ++a) {
    put<double>(out, 179 + 16 * size_t(a), double(hi[a]) * opt.scale[size_t(a)] + offset[size_t(a)]);
    put<double>(out, 187 + 16 * size_t(a), double(lo[a]) * opt.scale[size_t(a)] + offset[size_t(a)]);
  }
  pos = point_offset + n * rec;
  for (const LasVlr& v : opt.evlrs) {
    if (v.user_id.size() > 16 || v.description.size() > 32) fail(path, "an EVLR's user id has 16 characters at most, its description 32");
    std::memcpy(out.data() + pos + 2, v.user_id.data(), v.user_id.size());
    put<uint16_t>(out, pos + 18, v.record_id);
    put<uint64_t>(out, pos + 20, uint64_t(v.payload.size()));
    std::memcpy(out.data() + pos + 28, v.description.data(), v.description.size());
    if (!v.payload.empty()) std::memcpy(out.data() + pos + kEvlrHeader, v.payload.data(), v.payload.size());
    pos += kEvlrHeader + v.payload.size();
  }
  return out;
}

std::vector<LasVlr> las_crs_vlrs(const CloudCrs& crs, int minor, const std::string& path) {
  if (crs.empty()) return {};
  if (minor == 4) {
    if (crs.wkt.empty()) fail(path, "LAS 1.4 declares its CRS as WKT, and none is given (EPSG:" + std::to_string(crs.epsg) + ")");
    if (crs.wkt.size() + 1 > 65535) fail(path, "the CRS's WKT is longer than a VLR holds (65535 bytes)");
    return {{"LASF_Projection", 2112, crs.wkt + '\0', "OGC WKT"}};
  }
  if (crs.epsg <= 0 || crs.epsg > 65535)
    fail(path, "LAS 1." + std::to_string(minor) + " declares its CRS as GeoTIFF keys, which need an EPSG code up to 65535 (" +
                   (crs.epsg ? "EPSG:" + std::to_string(crs.epsg) : std::string("none is given")) + ")");
  // GeoKeyDirectoryTag: version 1, revision 1.0, then (KeyID, TIFFTagLocation 0 = inline, count 1, value), ascending.
  const uint16_t w[] = {1, 1, 0, 4, 1024, 0, 1, 1, 1025, 0, 1, 1, 3072, 0, 1, uint16_t(crs.epsg), 3076, 0, 1, 9001};
  std::string keys(sizeof w, '\0');
  for (size_t k = 0; k < sizeof w / 2; ++k) keys[2 * k] = char(w[k] & 0xff), keys[2 * k + 1] = char(w[k] >> 8);
  return {{"LASF_Projection", 34735, keys, "GeoTIFF GeoKeyDirectoryTag"}};
}

void write_las(const std::string& path, const PointCloud& cloud, const LasWriteOptions& opt) {
  write_file_atomic(path, las_bytes(path, cloud, opt));
}

// The LAS and LAZ rows of the cloud-format table (formats/clouds/formats.h). A .laz file (and a
// COPC file, .copc.laz) is read by the same reader, which decodes its compressed points.
namespace {
int64_t las_count(const std::string& path) {
  MappedFile m(path, MappedFile::HeaderOnly{});
  return int64_t(std::min<uint64_t>(parse_las_header(m.data(), m.size(), path).points, uint64_t(INT64_MAX)));
}
CloudFormat las_format() {
  CloudFormat f;
  f.name = "las";
  f.extension = ".las";
  f.doc = "ASPRS LAS 1.0-1.4, point formats 0-10: x y z (scaled int32 + offset) and intensity / 65535";
  f.decode = [](const std::string& p, const DecodeOptions& o, DecodeInfo* i) { return read_las(p, o, i); };
  f.count = las_count;
  f.write = [](const std::string& path, const PointCloud& c) { write_las(path, c); };
  f.write_crs = [](const std::string& path, const PointCloud& c, const CloudCrs& crs) {
    LasWriteOptions o;
    o.vlrs = las_crs_vlrs(crs, o.version_minor, path);
    write_las(path, c, o);
  };
  return f;
}
CloudFormat laz_format() {
  CloudFormat f;
  f.name = "laz";
  f.extension = ".laz";
  f.doc = "LAZ (LASzip-compressed LAS 1.0-1.4: point formats 0-10, extra bytes) and COPC (.copc.laz): x y z and "
          "intensity / 65535, chunks decoded on all threads";
  f.decode = [](const std::string& p, const DecodeOptions& o, DecodeInfo* i) { return read_las(p, o, i); };
  f.count = las_count;
  f.write = nullptr;  // read-only
  return f;
}
SL_REGISTER_CLOUD_FORMAT(las_format);
SL_REGISTER_CLOUD_FORMAT(laz_format);
}  // namespace

}  // namespace sl
