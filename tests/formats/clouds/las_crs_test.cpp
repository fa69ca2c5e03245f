// The CRS a LAS file declares (LASF_Projection records): GeoTIFF keys (record 34735) and OGC WKT
// (record 2112, in a VLR or a LAS 1.4 EVLR), read from the header walk and shown by inspect.
// Fixtures: LAStools' lasduplicate output in fixtures/other_tools (its GeoKeyDirectory, dumped by
// hand with Python's struct: GTModelType 1, ProjectedCSType 3645, ProjLinearUnits 9001, VerticalCSType
// 5703, VerticalUnits 9001), and files written here with the records laid out as the LAS 1.4 (R15)
// specification section 2.5 and the GeoTIFF 1.0 specification section 2.4 give them, the WKT as GDAL
// writes EPSG:32632 (WKT1, AUTHORITY last) and as PROJ writes WKT2 (ID last).
#include <gtest/gtest.h>

#include <cstring>

#include "graph/atomic_file.h"
#include "graph/error.h"
#include "apps/inspect.h"
#include "formats/clouds/las.h"
#include "formats/maps/projection.h"
#include "tests/formats/clouds/io_test_util.h"

namespace sl {
namespace {

// A GeoKeyDirectory payload: header (1, 1, 0, n) then (KeyID, 0, 1, value) per key.
std::string geokeys(const std::vector<std::pair<uint16_t, uint16_t>>& keys) {
  std::vector<uint16_t> w = {1, 1, 0, uint16_t(keys.size())};
  for (const auto& [id, v] : keys) w.insert(w.end(), {id, 0, 1, v});
  std::string s(w.size() * 2, '\0');
  std::memcpy(s.data(), w.data(), s.size());  // little-endian host, as the file
  return s;
}

const char* kWkt1 = R"(PROJCS["WGS 84 / UTM zone 32N",GEOGCS["WGS 84",DATUM["WGS_1984",SPHEROID["WGS 84",6378137,298.257223563,AUTHORITY["EPSG","7030"]],AUTHORITY["EPSG","6326"]],PRIMEM["Greenwich",0,AUTHORITY["EPSG","8901"]],UNIT["degree",0.0174532925199433,AUTHORITY["EPSG","9122"]],AUTHORITY["EPSG","4326"]],PROJECTION["Transverse_Mercator"],PARAMETER["latitude_of_origin",0],PARAMETER["central_meridian",9],PARAMETER["scale_factor",0.9996],PARAMETER["false_easting",500000],PARAMETER["false_northing",0],UNIT["metre",1,AUTHORITY["EPSG","9001"]],AXIS["Easting",EAST],AXIS["Northing",NORTH],AUTHORITY["EPSG","32632"]])";
const char* kWkt2 = R"(PROJCRS["WGS 84 / UTM zone 17N",
    BASEGEOGCRS["WGS 84",DATUM["World Geodetic System 1984",ELLIPSOID["WGS 84",6378137,298.257223563]]],
    CONVERSION["UTM zone 17N",METHOD["Transverse Mercator",ID["EPSG",9807]]],
    CS[Cartesian,2],AXIS["easting",east,LENGTHUNIT["metre",1]],AXIS["northing",north,LENGTHUNIT["metre",1]],
    ID["EPSG",32617]])";

LasHeader header_of(const std::string& bytes) { return parse_las_header(bytes.data(), bytes.size(), "t.las"); }

std::string las_with(const std::vector<LasVlr>& vlrs, const std::vector<LasVlr>& evlrs = {}) {
  LasWriteOptions o;
  o.vlrs = vlrs;
  o.evlrs = evlrs;
  return las_bytes("t.las", test::random_cloud(20, {"x", "y", "z", "intensity"}, 3), o);
}

TEST(LasCrs, LastoolsGeoKeysGiveTheirProjectedAndVerticalCodes) {
  const std::string path = std::string(SL_SOURCE_DIR) + "/tests/formats/clouds/fixtures/other_tools/lastools_haystack_rock_9000.las";
  const std::string s = read_file(path);
  const LasHeader h = parse_las_header(s.data(), s.size(), path);
  EXPECT_EQ(h.crs.source, "GeoTIFF keys");
  EXPECT_EQ(h.crs.epsg, 3645);
  EXPECT_FALSE(h.crs.geographic);
  EXPECT_EQ(h.crs.vertical_epsg, 5703);
  EXPECT_EQ(describe_crs(h.crs), "EPSG:3645 (GeoTIFF keys; vertical EPSG:5703)");
  const InspectReport r = inspect_file(path);
  bool shown = false;
  for (const auto& [k, v] : r.header) shown |= k == "CRS" && v == "EPSG:3645 (GeoTIFF keys; vertical EPSG:5703)";
  EXPECT_TRUE(shown);
}

TEST(LasCrs, GeoKeysWktInAVlrOrAnEvlrAndNone) {
  LasHeader h = header_of(las_with({{"LASF_Projection", 34735, geokeys({{1024, 1}, {1025, 1}, {3072, 32617}}), "GeoKeyDirectoryTag"}}));
  EXPECT_EQ(describe_crs(h.crs), "EPSG:32617 (GeoTIFF keys)");
  h = header_of(las_with({{"LASF_Projection", 34735, geokeys({{1024, 2}, {2048, 4326}}), ""}}));
  EXPECT_EQ(h.crs.epsg, 4326);
  EXPECT_TRUE(h.crs.geographic);
  EXPECT_EQ(describe_crs(h.crs), "EPSG:4326 (geographic) (GeoTIFF keys)");
  h = header_of(las_with({{"LASF_Projection", 34735, geokeys({{1024, 1}, {3072, 32767}}), ""}}));  // user-defined
  EXPECT_EQ(describe_crs(h.crs), "no EPSG code (GeoTIFF keys)");
  h = header_of(las_with({}, {{"LASF_Projection", 2112, std::string(kWkt1) + '\0', "OGC WKT"}}));
  EXPECT_EQ(describe_crs(h.crs), "WKT \"WGS 84 / UTM zone 32N\" (EPSG:32632)");
  EXPECT_EQ(h.crs.wkt, kWkt1);
  // Both: the WKT wins (LAS 1.4 says WKT for formats 6-10), whichever comes first.
  h = header_of(las_with({{"LASF_Projection", 2112, kWkt2, ""},
                          {"LASF_Projection", 34735, geokeys({{1024, 1}, {3072, 32632}}), ""}}));
  EXPECT_EQ(describe_crs(h.crs), "WKT \"WGS 84 / UTM zone 17N\" (EPSG:32617)");
  h = header_of(las_with({{"other", 1, "x", ""}}));
  EXPECT_EQ(describe_crs(h.crs), "none declared");
}

TEST(LasCrs, ATruncatedGeoKeyDirectoryIsAnErrorNamingTheByte) {
  std::string keys = geokeys({{1024, 1}, {3072, 32617}});
  keys[6] = 9;  // 9 keys declared, 2 present; the count is at byte 375 (1.4 header) + 54 (VLR header) + 6
  try {
    header_of(las_with({{"LASF_Projection", 34735, keys, ""}}));
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("t.las: byte 435: GeoKeyDirectory (LASF_Projection 34735): 9 keys do not fit its 24 bytes"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace sl

namespace sl {
namespace {

// The records the writer declares a CRS with (las_crs_vlrs), read back by our reader: LAS 1.4 a WKT
// record (and the global encoding's WKT bit, also for formats 0-5), LAS 1.2 GeoTIFF keys laid out as
// GeoTIFF 1.0 section 2.4 gives them (checked word by word here).
TEST(LasCrs, TheWriterDeclaresWktIn14AndGeoKeysBefore) {
  CloudCrs crs;
  crs.epsg = 32632;
  crs.wkt = kWkt1;
  EXPECT_EQ(projected_crs_wkt(32632, "t").wkt, kWkt1);  // what gen-data declares is GDAL's WKT1 of EPSG:32632
  const PointCloud c = test::random_cloud(20, {"x", "y", "z", "intensity"}, 3);
  LasWriteOptions o;
  o.vlrs = las_crs_vlrs(crs, 4, "t.las");
  std::string bytes = las_bytes("t.las", c, o);
  LasHeader h = header_of(bytes);
  EXPECT_EQ(describe_crs(h.crs), "WKT \"WGS 84 / UTM zone 32N\" (EPSG:32632)");
  EXPECT_EQ(h.crs.wkt, kWkt1);
  EXPECT_EQ(uint8_t(bytes[6]), 0x10);  // global encoding: WKT
  o.point_format = 1;                    // 1.4, format 1: WKT too, and the bit says so
  bytes = las_bytes("t.las", c, o);
  EXPECT_EQ(uint8_t(bytes[6]), 0x10);
  EXPECT_EQ(header_of(bytes).crs.epsg, 32632);

  o = LasWriteOptions{};
  o.version_minor = 2, o.point_format = 0;
  o.vlrs = las_crs_vlrs(crs, 2, "t.las");
  bytes = las_bytes("t.las", c, o);
  h = header_of(bytes);
  EXPECT_EQ(describe_crs(h.crs), "EPSG:32632 (GeoTIFF keys)");
  EXPECT_EQ(uint8_t(bytes[6]), 0);
  ASSERT_EQ(o.vlrs.size(), 1u);
  const std::string& k = o.vlrs[0].payload;
  std::vector<uint16_t> w(k.size() / 2);
  std::memcpy(w.data(), k.data(), k.size());
  EXPECT_EQ(w, (std::vector<uint16_t>{1, 1, 0, 4, 1024, 0, 1, 1, 1025, 0, 1, 1, 3072, 0, 1, 32632, 3076, 0, 1, 9001}));

  // What a version cannot hold is an error naming the file.
  try {
    las_crs_vlrs(CloudCrs{32632, ""}, 4, "t.las");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "t.las: LAS 1.4 declares its CRS as WKT, and none is given (EPSG:32632)");
  }
  EXPECT_THROW(las_crs_vlrs(CloudCrs{0, kWkt1}, 2, "t.las"), Error);
  EXPECT_TRUE(las_crs_vlrs(CloudCrs{}, 4, "t.las").empty());
}

}  // namespace
}  // namespace sl
