// LAZ files written by Entwine through PDAL (laz-perf inside): three octree nodes of an EPT
// dataset (tests/formats/clouds/fixtures/other_tools/entwine_lion_ept, from the npm package
// potree-core 1.0.7, see the folder's README): LAS 1.2, point format 2 with 4 extra bytes (an
// extra-bytes VLR describing one uint32 "OriginId"), LASzip 3.1r0 point-wise chunked (compressor
// 2), items POINT10, RGB12 and BYTE (4 bytes), all version 2. Each is read with the header as
// stored, the count the header and ept-hierarchy give, the points' bounds equal to the header's
// (to the scale), and five points equal field for field -- extra bytes included -- to what another
// decoder gives (laz-perf 0.0.7 decompressing, copc.js 0.0.8 parsing; ept_oracle.js there printed
// them).
#include <gtest/gtest.h>

#include <rapidjson/document.h>
#include <tbb/global_control.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "apps/inspect.h"
#include "formats/clouds/formats.h"
#include "formats/clouds/las.h"
#include "formats/clouds/laz.h"
#include "graph/atomic_file.h"

namespace sl {
namespace {

const std::string kDir = std::string(SL_SOURCE_DIR) + "/tests/formats/clouds/fixtures/other_tools/entwine_lion_ept/";

// A point as ept_oracle.js printed it (copc.js's dimensions of laz-perf's record).
struct OraclePoint {
  size_t index;
  int32_t X, Y, Z;      // as stored
  double x, y, z;       // X * scale + offset (float64)
  uint16_t intensity;
  uint8_t return_number, returns, scan_direction, edge, classification;  // classification: the whole byte
  int8_t scan_angle;
  uint8_t user_data;
  uint16_t point_source, red, green, blue;
  uint32_t origin_id;   // the 4 extra bytes, uint32
};

struct EptNode {
  const char* node;     // ept-data/<node>.laz
  size_t bytes;
  uint64_t points;
  Vec3d header_min, header_max;  // as stored
  int32_t lo[3], hi[3];          // the decoded points' bounds, as stored integers (the oracle's)
  std::vector<OraclePoint> sample;  // points 0, n/4, n/2, 3n/4, n-1
};

const std::vector<EptNode>& nodes() {
  static const std::vector<EptNode> n = {
      {"2-1-3-1", 3830, 289, {-3.319, 6.5, -2.406}, {-2.001, 6.695, -1.001}, {-1319, 2500, -1406}, {-1, 2695, -1},
       {{0, -404, 2620, -1046, -2.404, 6.62, -2.0460000000000003, 21074, 1, 1, 0, 0, 0, 0, 0, 1, 19456, 23296, 14080, 77},
        {72, -585, 2663, -113, -2.585, 6.663, -1.113, 54227, 1, 1, 0, 0, 0, 0, 0, 1, 51456, 57856, 41216, 126},
        {144, -276, 2545, -256, -2.276, 6.545, -1.256, 41377, 1, 1, 0, 0, 0, 0, 0, 1, 47616, 37376, 46336, 126},
        {216, -620, 2508, -153, -2.62, 6.508, -1.153, 22873, 1, 1, 0, 0, 0, 0, 0, 1, 20480, 26368, 11776, 118},
        {288, -126, 2517, -385, -2.126, 6.5169999999999995, -1.385, 57054, 1, 1, 0, 0, 0, 0, 0, 1, 55808, 59136, 48896, 194}}},
      {"1-1-0-1", 4751, 444, {-2, 3.571, -0.949}, {-1.98, 3.9530000000000003, -0.33199999999999996}, {0, -429, 51},
       {20, -47, 668},
       {{0, 10, -204, 242, -1.99, 3.796, -0.758, 31354, 1, 1, 0, 0, 0, 0, 0, 1, 31232, 31232, 32512, 166},
        {111, 2, -396, 161, -1.998, 3.604, -0.839, 38036, 1, 1, 0, 0, 0, 0, 0, 1, 37888, 37888, 38656, 162},
        {222, 18, -224, 145, -1.982, 3.776, -0.855, 38550, 1, 1, 0, 0, 0, 0, 0, 1, 39680, 37888, 39936, 162},
        {333, 3, -356, 81, -1.997, 3.644, -0.919, 31354, 1, 1, 0, 0, 0, 0, 0, 1, 32512, 30976, 30720, 166},
        {443, 0, -52, 450, -2, 3.948, -0.55, 39064, 1, 1, 0, 0, 0, 0, 0, 1, 38400, 38912, 40704, 199}}},
      {"2-0-1-1", 5701, 548, {-4.812, 2.285, -2.373}, {-4.5009999999999994, 3.694, -1.237}, {-2812, -1715, -1373},
       {-2501, -306, -237},
       {{0, -2719, -1542, -1253, -4.718999999999999, 2.458, -2.253, 12850, 1, 1, 0, 0, 0, 0, 0, 1, 13312, 12800, 12544, 2},
        {137, -2683, -783, -1112, -4.683, 3.217, -2.112, 10794, 1, 1, 0, 0, 0, 0, 0, 1, 11008, 10496, 11776, 1},
        {274, -2774, -647, -783, -4.774, 3.3529999999999998, -1.783, 15677, 1, 1, 0, 0, 0, 0, 0, 1, 16128, 15616, 14336, 1},
        {411, -2622, -678, -700, -4.622, 3.322, -1.7000000000000002, 15420, 1, 1, 0, 0, 0, 0, 0, 1, 16384, 15104, 14592, 27},
        {547, -2534, -1407, -237, -4.534000000000001, 2.593, -1.237, 19018, 1, 1, 0, 0, 0, 0, 0, 1, 20480, 18432, 18432, 1}}},
  };
  return n;
}

template <class T>
T get(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// The node's point count in the EPT hierarchy (ept-hierarchy/0-0-0-0.json: "D-X-Y-Z": count).
int64_t hierarchy_count(const std::string& node) {
  const std::string s = read_file(kDir + "ept-hierarchy/0-0-0-0.json");
  rapidjson::Document d;
  d.Parse(s.data(), s.size());
  EXPECT_FALSE(d.HasParseError());
  EXPECT_EQ(d.MemberCount(), 16u);  // the dataset's 16 nodes, of which the three smallest are kept
  const auto it = d.FindMember(node.c_str());
  return it == d.MemberEnd() ? -1 : it->value.GetInt64();
}

TEST(LazOtherTools, EntwineNodesAreReadAsAnotherDecoderReadsThem) {
  const std::string ept = read_file(kDir + "ept.json");
  EXPECT_NE(ept.find("\"dataType\" : \"laszip\""), std::string::npos);
  EXPECT_NE(ept.find("\"name\" : \"OriginId\""), std::string::npos);
  for (const EptNode& n : nodes()) {
    const std::string path = kDir + "ept-data/" + n.node + ".laz";
    const std::string file = read_file(path);
    ASSERT_EQ(file.size(), n.bytes) << n.node;

    // The header as stored.
    const LasHeader h = parse_las_header(file.data(), file.size(), path);
    EXPECT_EQ(h.version_minor, 2) << n.node;
    EXPECT_EQ(h.header_size, 227) << n.node;
    EXPECT_EQ(h.point_offset, 579u) << n.node;
    EXPECT_EQ(h.vlr_count, 2u) << n.node;
    EXPECT_EQ(h.format_byte, 0x82) << n.node;
    EXPECT_EQ(h.point_format, 2) << n.node;
    EXPECT_EQ(h.record_length, 30) << n.node;  // 26 + 4 extra bytes
    EXPECT_EQ(h.legacy_points, n.points) << n.node;
    EXPECT_EQ(h.points, n.points) << n.node;
    EXPECT_EQ(h.scale, (Vec3d{0.001, 0.001, 0.001})) << n.node;
    EXPECT_EQ(h.offset, (Vec3d{-2, 4, -1})) << n.node;
    EXPECT_EQ(h.min, n.header_min) << n.node;
    EXPECT_EQ(h.max, n.header_max) << n.node;
    EXPECT_EQ(h.system_id, "PDAL") << n.node;
    EXPECT_EQ(h.software, "Entwine") << n.node;
    EXPECT_EQ(h.vlrs, (std::vector<std::pair<std::string, uint16_t>>{{"LASF_Spec", 4}, {"laszip encoded", 22204}}))
        << n.node;
    EXPECT_TRUE(h.evlrs.empty()) << n.node;
    EXPECT_TRUE(h.laz) << n.node;
    EXPECT_FALSE(h.copc) << n.node;
    // The extra-bytes VLR's one descriptor (our reader skips extra bytes; read here from the file):
    // data type 5 (uint32), named OriginId.
    const char* eb = file.data() + 227 + 54;
    EXPECT_EQ(eb[2], 5) << n.node;
    EXPECT_STREQ(eb + 4, "OriginId") << n.node;

    // The LASzip VLR: 3.1r0, point-wise chunked, 50,000-point chunks (one here), three items.
    const LasLaz z = las_laz(file.data(), file.size(), h, path);
    EXPECT_EQ(z.info.compressor, 2) << n.node;
    EXPECT_EQ(z.info.coder, 0) << n.node;
    EXPECT_EQ(z.info.version_major, 3) << n.node;
    EXPECT_EQ(z.info.version_minor, 1) << n.node;
    EXPECT_EQ(z.info.version_revision, 0) << n.node;
    EXPECT_EQ(z.info.options, 0u) << n.node;
    EXPECT_EQ(z.info.chunk_size, 50000u) << n.node;
    EXPECT_EQ(z.info.special_evlr_count, -1) << n.node;
    EXPECT_EQ(z.info.special_evlr_offset, -1) << n.node;
    ASSERT_EQ(z.info.items.size(), 3u) << n.node;
    const LazItem want[3] = {{kLazPoint10, 20, 2}, {kLazRgb12, 6, 2}, {kLazByte, 4, 2}};
    for (size_t k = 0; k < 3; ++k) {
      EXPECT_EQ(z.info.items[k].type, want[k].type) << n.node << " item " << k;
      EXPECT_EQ(z.info.items[k].size, want[k].size) << n.node << " item " << k;
      EXPECT_EQ(z.info.items[k].version, want[k].version) << n.node << " item " << k;
    }
    ASSERT_EQ(z.chunks.chunks.size(), 1u) << n.node;
    EXPECT_EQ(z.chunks.chunks[0].points, n.points) << n.node;

    // The count: the header's, the hierarchy's, the format table's and the decoded one.
    EXPECT_EQ(hierarchy_count(n.node), int64_t(n.points)) << n.node;
    const CloudFormat* fmt = format_of_path(path);
    ASSERT_NE(fmt, nullptr);
    EXPECT_EQ(fmt->name, "laz");
    EXPECT_EQ(fmt->count(path), int64_t(n.points)) << n.node;
    std::vector<uint8_t> records;
    decode_laz(file.data(), file.size(), z.info, h.point_offset, h.points, h.record_length, file.size(), path,
               [&](uint64_t, uint64_t k, const uint8_t* r) { records.insert(records.end(), r, r + k * 30); });
    ASSERT_EQ(records.size(), n.points * 30) << n.node;
    DecodeInfo info;
    const PointCloud c = read_cloud_file(path, {}, &info);
    ASSERT_EQ(c.size(), n.points) << n.node;
    EXPECT_EQ(info.dropped, 0) << n.node;
    ASSERT_EQ(c.fields, (std::vector<std::string>{"x", "y", "z", "intensity"}));
    EXPECT_EQ(c.origin, h.offset) << n.node;  // every point within 2048 m of the offset

    // The decoded points' bounds are the oracle's, and the header's to the scale: the header's
    // bound is the extreme record's X * scale + offset, to the bit on every axis but 1-1-0-1's max
    // y (3.9530000000000003 stored, one float64 step above -47 * 0.001 + 4 = 3.953, as Entwine
    // computed it). The cloud's column bounds are float(X * scale + (offset - origin)) of the same.
    for (size_t a = 0; a < 3; ++a) {
      int32_t lo = std::numeric_limits<int32_t>::max(), hi = std::numeric_limits<int32_t>::min();
      for (uint64_t i = 0; i < n.points; ++i) {
        const int32_t v = get<int32_t>(&records[i * 30 + 4 * a]);
        lo = std::min(lo, v), hi = std::max(hi, v);
      }
      EXPECT_EQ(lo, n.lo[a]) << n.node << " axis " << a;
      EXPECT_EQ(hi, n.hi[a]) << n.node << " axis " << a;
      EXPECT_EQ(std::llround((h.min[a] - h.offset[a]) / h.scale[a]), lo) << n.node << " axis " << a;
      EXPECT_EQ(std::llround((h.max[a] - h.offset[a]) / h.scale[a]), hi) << n.node << " axis " << a;
      const bool off_by_a_step = std::string(n.node) == "1-1-0-1" && a == 1;
      EXPECT_EQ(lo * h.scale[a] + h.offset[a], h.min[a]) << n.node << " axis " << a;
      if (off_by_a_step)
        EXPECT_EQ(std::nextafter(hi * h.scale[a] + h.offset[a], INFINITY), h.max[a]) << n.node << " axis " << a;
      else
        EXPECT_EQ(hi * h.scale[a] + h.offset[a], h.max[a]) << n.node << " axis " << a;
      float clo = std::numeric_limits<float>::infinity(), chi = -clo;
      for (float v : c.columns[a]) clo = std::min(clo, v), chi = std::max(chi, v);
      EXPECT_EQ(clo, float(lo * h.scale[a] + (h.offset[a] - c.origin[a]))) << n.node << " axis " << a;
      EXPECT_EQ(chi, float(hi * h.scale[a] + (h.offset[a] - c.origin[a]))) << n.node << " axis " << a;
    }

    // Five points, every field of the record -- the 4 extra bytes included -- as the oracle gives
    // them; the world coordinate in double exactly its X * scale + offset; the cloud's columns.
    for (const OraclePoint& p : n.sample) {
      ASSERT_LT(p.index, n.points);
      const uint8_t* r = &records[p.index * 30];
      const std::string at = std::string(n.node) + " point " + std::to_string(p.index);
      const int32_t X[3] = {p.X, p.Y, p.Z};
      const double w[3] = {p.x, p.y, p.z};
      for (size_t a = 0; a < 3; ++a) {
        EXPECT_EQ(get<int32_t>(r + 4 * a), X[a]) << at << " axis " << a;
        EXPECT_EQ(get<int32_t>(r + 4 * a) * h.scale[a] + h.offset[a], w[a]) << at << " axis " << a;
        EXPECT_EQ(c.columns[a][p.index], float(X[a] * h.scale[a] + (h.offset[a] - c.origin[a]))) << at << " axis " << a;
      }
      EXPECT_EQ(get<uint16_t>(r + 12), p.intensity) << at;
      EXPECT_EQ(c.columns[3][p.index], float(p.intensity) / 65535.f) << at;
      EXPECT_EQ(r[14] & 7, p.return_number) << at;
      EXPECT_EQ((r[14] >> 3) & 7, p.returns) << at;
      EXPECT_EQ((r[14] >> 6) & 1, p.scan_direction) << at;
      EXPECT_EQ(r[14] >> 7, p.edge) << at;
      EXPECT_EQ(r[15], p.classification) << at;
      EXPECT_EQ(int8_t(r[16]), p.scan_angle) << at;
      EXPECT_EQ(r[17], p.user_data) << at;
      EXPECT_EQ(get<uint16_t>(r + 18), p.point_source) << at;
      EXPECT_EQ(get<uint16_t>(r + 20), p.red) << at;
      EXPECT_EQ(get<uint16_t>(r + 22), p.green) << at;
      EXPECT_EQ(get<uint16_t>(r + 24), p.blue) << at;
      EXPECT_EQ(get<uint32_t>(r + 26), p.origin_id) << at;
    }

    // One thread decodes the same cloud as all of them.
    PointCloud one;
    {
      tbb::global_control serial(tbb::global_control::max_allowed_parallelism, 1);
      one = read_cloud_file(path);
    }
    EXPECT_EQ(one.origin, c.origin) << n.node;
    EXPECT_EQ(one.columns, c.columns) << n.node;

    // inspect: the LASzip items and the count, no warning.
    const InspectReport ir = inspect_file(path);
    EXPECT_EQ(ir.format, "laz");
    EXPECT_EQ(ir.points, int64_t(n.points));
    EXPECT_TRUE(ir.warning.empty()) << ir.warning;
    EXPECT_NE(to_text(ir).find("POINT10 v2 (20 bytes), RGB12 v2 (6 bytes), BYTE v2 (4 bytes)"), std::string::npos)
        << to_text(ir);
  }
}

}  // namespace
}  // namespace sl
