// LAS and LAZ files written by other tools (tests/formats/clouds/fixtures/other_tools, made by make.sh there from
// the npm packages that ship them): LAStools' lasduplicate (LAS 1.2, point format 0, a GeoTIFF
// keys VLR, LAS 1.0's record and point-data signatures kept, an offset 230 km from the points)
// and libLAS 1.8.0 as PotreeConverter used it (LAS 1.2, point format 2; the same points as LAZ).
// Each is read with the header's count, the bounding box another reader (loaders.gl 4.5.1's
// LASLoader) gives, and its points -- recorded from that reader, see the folder's README -- to
// float32's rounding of world - origin; the LAZ decodes to the LAS file's points.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <vector>

#include "graph/atomic_file.h"
#include "graph/error.h"
#include "formats/clouds/formats.h"
#include "apps/inspect.h"
#include "formats/clouds/las.h"
#include "formats/clouds/laz.h"

namespace sl {
namespace {

const std::string kDir = std::string(SL_SOURCE_DIR) + "/tests/formats/clouds/fixtures/other_tools/";

struct Point {
  size_t index;
  double x, y, z;  // world, as loaders.gl decodes them (float64: X * scale + offset)
  uint16_t intensity;
};

struct Fixture {
  const char* file;
  const char* software;
  int minor, format;
  uint16_t record_length;
  uint32_t point_offset;
  uint64_t points;
  Vec3d scale, offset;
  Vec3d header_min, header_max;  // as stored
  Vec3d lo, hi;                  // the points' bounds (loaders.gl)
  Vec3d origin;                  // the auto rule's (formats/clouds/origin.h)
  std::vector<std::pair<std::string, uint16_t>> vlrs;
  std::vector<Point> sample;
};

const std::vector<Fixture>& fixtures() {
  static const std::vector<Fixture> f = {
      // The header's bounds are the points' (the cut recomputed them as LAStools did for the
      // whole file). The offset lies 230 km from the points: the origin is their grid origin.
      {"lastools_haystack_rock_9000.las", "lasduplicate (160730) commercia", 2, 0, 20, 331, 9000,
       {0.01, 0.01, 0.001}, {2000000, 200000, 0},
       {2230738.84, 252070.78, -1.256}, {2231096.08, 252217.05, 75.485},
       {2230738.84, 252070.78, -1.256}, {2231096.08, 252217.05, 75.485},
       {2230700, 252000, -100},
       {{"LASF_Projection", 34735}},
       {{0, 2230844.22, 252080.93, -0.026000000000000002, 0},
        {1, 2230817.93, 252082.06, 0.226, 0},
        {2601, 2230810.24, 252122, -0.022, 0},
        {4500, 2231059.47, 252139.78, 1.8840000000000001, 0},
        {8999, 2230848.34, 252213.04, 67.577, 0}}},
      // PotreeConverter stores its octree node's cube as the header's bounds, not the points'
      // extent the specification asks for: the points lie inside it.
      {"potree_lion_r.las", "libLAS 1.8.0", 2, 2, 26, 227, 5202,
       {0.001, 0.001, 0.001}, {0, 0, 0},
       {-4.985399999999999, 1.0366, -3.4494}, {0.702300000000001, 6.7243, 2.2383000000000006},
       {-4.976, 1.054, -3.4330000000000003}, {-0.789, 6.719, 1.104},
       {0, 0, 0},
       {},
       {{0, -2.544, 2.878, 0.882, 50629},
        {1, -2.498, 2.835, 0.741, 38807},
        {2601, -2.0020000000000002, 5.563, -2.569, 32382},
        {4500, -4.142, 3.1710000000000003, -2.891, 39578},
        {5201, -4.914, 6.002, -3.2920000000000003, 12336}}},
  };
  return f;
}

// Half of float32's step at `local`: how far float(world - origin) may lie from it.
double half_ulp(float local) {
  const float a = std::fabs(local);
  return double(std::nextafter(a, std::numeric_limits<float>::infinity()) - a) / 2;
}

LasHeader header_of(const std::string& path) {
  const std::string s = read_file(path);
  return parse_las_header(s.data(), s.size(), path);
}

TEST(LasOtherTools, HeadersAreReadAsStored) {
  for (const Fixture& f : fixtures()) {
    const LasHeader h = header_of(kDir + f.file);
    EXPECT_EQ(h.version_minor, f.minor) << f.file;
    EXPECT_EQ(h.point_format, f.format) << f.file;
    EXPECT_FALSE(h.laz) << f.file;
    EXPECT_EQ(h.record_length, f.record_length) << f.file;
    EXPECT_EQ(h.point_offset, f.point_offset) << f.file;
    EXPECT_EQ(h.points, f.points) << f.file;
    EXPECT_EQ(h.software, f.software) << f.file;
    EXPECT_EQ(h.scale, f.scale) << f.file;
    EXPECT_EQ(h.offset, f.offset) << f.file;
    EXPECT_EQ(h.min, f.header_min) << f.file;
    EXPECT_EQ(h.max, f.header_max) << f.file;
    EXPECT_EQ(h.vlrs, f.vlrs) << f.file;
    EXPECT_TRUE(h.evlrs.empty()) << f.file;
  }
}

TEST(LasOtherTools, CountBoundsAndPointsAreThoseAnotherReaderGives) {
  for (const Fixture& f : fixtures()) {
    const std::string path = kDir + f.file;
    const CloudFormat* fmt = format_of_path(path);
    ASSERT_NE(fmt, nullptr);
    EXPECT_EQ(fmt->name, "las");
    EXPECT_EQ(fmt->count(path), int64_t(f.points)) << f.file;
    DecodeInfo info;
    const PointCloud c = read_cloud_file(path, {}, &info);
    ASSERT_EQ(c.size(), f.points) << f.file;
    EXPECT_EQ(info.dropped, 0) << f.file;
    EXPECT_EQ(c.origin, f.origin) << f.file;
    ASSERT_EQ(c.fields, (std::vector<std::string>{"x", "y", "z", "intensity"}));

    // The bounding box: the points' world bounds, each to float32's rounding of world - origin,
    // inside the header's box (and equal to it where the writer followed the specification).
    for (size_t a = 0; a < 3; ++a) {
      float lo = INFINITY, hi = -INFINITY;
      for (float v : c.columns[a]) lo = std::min(lo, v), hi = std::max(hi, v);
      EXPECT_LE(std::fabs(double(lo) + f.origin[a] - f.lo[a]), half_ulp(lo) + 1e-9) << f.file << " axis " << a;
      EXPECT_LE(std::fabs(double(hi) + f.origin[a] - f.hi[a]), half_ulp(hi) + 1e-9) << f.file << " axis " << a;
      EXPECT_GE(f.lo[a], f.header_min[a]) << f.file;
      EXPECT_LE(f.hi[a], f.header_max[a]) << f.file;
    }
    // Points recorded from loaders.gl: x y z are float(world - origin), the intensity / 65535.
    for (const Point& p : f.sample) {
      ASSERT_LT(p.index, c.size());
      const double w[3] = {p.x, p.y, p.z};
      for (size_t a = 0; a < 3; ++a)
        EXPECT_EQ(c.columns[a][p.index], float(w[a] - f.origin[a])) << f.file << " point " << p.index << " axis " << a;
      EXPECT_EQ(c.columns[3][p.index], float(p.intensity) / 65535.f) << f.file << " point " << p.index;
    }

    // inspect: the header's count, world statistics equal to those bounds.
    const InspectReport r = inspect_file(path);
    EXPECT_EQ(r.format, "las");
    EXPECT_EQ(r.points, int64_t(f.points));
    EXPECT_EQ(r.origin, f.origin);
    for (size_t a = 0; a < 3; ++a) {
      EXPECT_NEAR(r.fields[a].min, f.lo[a], 1e-4) << f.file << " axis " << a;
      EXPECT_NEAR(r.fields[a].max, f.hi[a], 1e-4) << f.file << " axis " << a;
    }
  }
}

// The same lion points compressed by LASzip (libLAS 1.8.0: format byte 0x82, the "laszip
// encoded" VLR: point-wise chunked, POINT10 and RGB12 version 2). loaders.gl (laz-perf inside)
// decompresses it to exactly the LAS file's points; so does our reader, record for record, and
// the cloud read from it equals the LAS file's value for value.
TEST(LasOtherTools, LazDecodesToItsLasTwin) {
  const std::string path = kDir + "potree_lion_r.laz";
  const LasHeader h = header_of(path);
  EXPECT_TRUE(h.laz);
  EXPECT_FALSE(h.copc);
  EXPECT_EQ(h.format_byte, 0x82);
  EXPECT_EQ(h.point_format, 2);
  EXPECT_EQ(h.points, 5202u);
  EXPECT_EQ(h.software, "libLAS 1.8.0");
  EXPECT_EQ(h.vlrs, (std::vector<std::pair<std::string, uint16_t>>{{"laszip encoded", 22204}}));
  const std::string laz = read_file(path), las = read_file(kDir + "potree_lion_r.las");
  const LasLaz z = las_laz(laz.data(), laz.size(), h, path);
  EXPECT_EQ(z.info.compressor, 2);
  EXPECT_EQ(z.info.chunk_size, 50000u);
  ASSERT_EQ(z.info.items.size(), 2u);
  EXPECT_EQ(z.info.items[0].type, kLazPoint10);
  EXPECT_EQ(z.info.items[1].type, kLazRgb12);
  ASSERT_EQ(z.chunks.chunks.size(), 1u);
  std::string records;
  decode_laz(laz.data(), laz.size(), z.info, h.point_offset, h.points, h.record_length, laz.size(), path,
             [&](uint64_t, uint64_t n, const uint8_t* r) { records.append(reinterpret_cast<const char*>(r), n * 26); });
  EXPECT_TRUE(records == las.substr(227, 5202 * 26));

  const CloudFormat* fmt = format_of_path(path);
  ASSERT_NE(fmt, nullptr);
  EXPECT_EQ(fmt->name, "laz");
  EXPECT_EQ(fmt->count(path), 5202);
  const PointCloud a = read_cloud_file(path), b = read_cloud_file(kDir + "potree_lion_r.las");
  ASSERT_EQ(a.size(), 5202u);
  EXPECT_EQ(a.origin, b.origin);
  EXPECT_EQ(a.columns, b.columns);
  const InspectReport r = inspect_file(path);
  EXPECT_EQ(r.format, "laz");
  EXPECT_EQ(r.points, 5202);
  EXPECT_TRUE(r.warning.empty()) << r.warning;
  EXPECT_NE(to_text(r).find("POINT10 v2"), std::string::npos) << to_text(r);
}

}  // namespace
}  // namespace sl
