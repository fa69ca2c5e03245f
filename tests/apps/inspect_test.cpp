#include "apps/inspect.h"

#include <gtest/gtest.h>

#include <chrono>
#include <rapidjson/document.h>

#include <cmath>
#include <limits>

#include "graph/error.h"
#include "tests/formats/clouds/io_test_util.h"
#include "formats/maps/lines_json.h"
#include "formats/clouds/pcd.h"

using sl::test::TempDir;

TEST(Inspect, PcdReportsHeaderAndStatsCountingNanInsteadOfDropping) {
  TempDir tmp;
  sl::PointCloud c;
  c.fields = {"x", "y", "z", "intensity"};
  const float nan = std::numeric_limits<float>::quiet_NaN();
  c.columns = {{1, nan, 3}, {-1, 2, 5}, {0.5f, 0.5f, 0.5f}, {10, 20, 60}};
  std::string p = tmp.path("s.pcd");
  sl::write_pcd(p, c, sl::PcdDataMode::Binary);
  auto r = sl::inspect_file(p);
  EXPECT_EQ(r.format, "pcd");
  EXPECT_EQ(r.points, 3);
  ASSERT_EQ(r.fields.size(), 4u);
  EXPECT_EQ(r.fields[0].name, "x");
  EXPECT_EQ(r.fields[0].nan_count, 1);
  EXPECT_EQ(r.fields[0].min, 1);
  EXPECT_EQ(r.fields[0].max, 3);
  EXPECT_EQ(r.fields[0].mean, 2);
  EXPECT_EQ(r.fields[3].mean, 30);
  EXPECT_EQ(r.header[1], (std::pair<std::string, std::string>{"FIELDS", "x y z intensity"}));
  EXPECT_EQ(r.header.back(), (std::pair<std::string, std::string>{"DATA", "binary"}));
  std::string text = sl::to_text(r);
  EXPECT_NE(text.find("points: 3"), std::string::npos) << text;
  EXPECT_NE(text.find("intensity"), std::string::npos) << text;

  rapidjson::Document d;
  d.Parse(sl::to_json(r).c_str());
  ASSERT_FALSE(d.HasParseError());
  EXPECT_EQ(d["points"].GetInt64(), 3);
  EXPECT_EQ(d["fields"][0]["nan_count"].GetInt64(), 1);
  EXPECT_EQ(d["fields"][3]["max"].GetDouble(), 60.0);
  EXPECT_EQ(std::string(d["header"]["DATA"].GetString()), "binary");
}

TEST(Inspect, PcdWithCountFieldExpandsElementsAndAllNanFieldIsNull) {
  TempDir tmp;
  std::string s = "VERSION .7\nFIELDS x n\nSIZE 4 4\nTYPE F F\nCOUNT 1 2\nWIDTH 2\nHEIGHT 1\nPOINTS 2\nDATA ascii\n"
                  "nan 1 2\nnan 3 4\n";
  std::string p = tmp.write("c.pcd", s);
  auto r = sl::inspect_file(p);
  ASSERT_EQ(r.fields.size(), 3u);
  EXPECT_EQ(r.fields[1].name, "n[0]");
  EXPECT_EQ(r.fields[2].name, "n[1]");
  EXPECT_EQ(r.fields[2].mean, 3);
  EXPECT_EQ(r.fields[0].nan_count, 2);
  EXPECT_TRUE(std::isnan(r.fields[0].mean));
  rapidjson::Document d;
  d.Parse(sl::to_json(r).c_str());
  ASSERT_FALSE(d.HasParseError());
  EXPECT_TRUE(d["fields"][0]["min"].IsNull());
}

TEST(Inspect, KittiBinAndLinesJsonReports) {
  TempDir tmp;
  float pts[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  std::string b = tmp.write("k.bin", std::string(reinterpret_cast<const char*>(pts), sizeof pts));
  auto r = sl::inspect_file(b);
  EXPECT_EQ(r.format, "bin");  // the KITTI row of formats/clouds/formats.h
  EXPECT_EQ(r.points, 2);
  EXPECT_EQ(r.fields[3].min, 4);
  EXPECT_EQ(r.fields[3].max, 8);

  sl::LinesFile lf{"scene_9", {{0, "curb", {{0, 0, 0}, {2, 0, 0}}}, {1, "curb", {{0, 0, 0}, {0, 4, 0}}},
                               {2, "wire", {{0, 0, 1}, {0, 0, 3}, {0, 0, 5}}}}};
  std::string j = tmp.path("s.json");
  sl::write_lines_json(j, lf);
  auto lr = sl::inspect_file(j);
  EXPECT_EQ(lr.format, "lines_json");
  EXPECT_EQ(lr.lines, 3);
  EXPECT_EQ(lr.points, 7);
  EXPECT_EQ(lr.categories, (std::map<std::string, int64_t>{{"curb", 2}, {"wire", 1}}));
  EXPECT_EQ(lr.fields[2].max, 5);
  EXPECT_NE(sl::to_text(lr).find("wire: 1"), std::string::npos);
}

TEST(Inspect, UnknownExtensionIsAnError) {
  TempDir tmp;
  std::string p = tmp.write("a.txt", "x");
  try {
    sl::inspect_file(p);
    FAIL();
  } catch (const sl::Error& e) {
    EXPECT_NE(std::string(e.what()).find(p + ": unknown file type '.txt'"), std::string::npos) << e.what();
  }
}

// fuzz_inspect: a short file whose header declares a huge COUNT made inspect set up one column
// name per element (millions) before the data was found too short. The data is checked first.
TEST(Inspect, HugeCountWithShortDataFailsOnTheDataBeforeSettingUpColumns) {
  sl::test::TempDir tmp;
  const std::string path = tmp.write("huge.pcd",
                                     "VERSION .7\nFIELDS x h\nSIZE 4 4\nTYPE F F\nCOUNT 1 16777216\nWIDTH 2\nHEIGHT 1\n"
                                     "POINTS 2\nDATA binary\n0123456789");
  const auto t0 = std::chrono::steady_clock::now();
  try {
    sl::inspect_file(path);
    FAIL() << "no error";
  } catch (const sl::Error& e) {
    EXPECT_NE(std::string(e.what()).find(path + ": byte "), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("data shorter than declared"), std::string::npos) << e.what();
  }
  // Without the check this sets up 16.7 million column names (seconds, gigabytes); with it, ~1 ms.
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 1.0);
}

// fuzz_inspect: a header alone (no points) with COUNT 3000000 made inspect set up 3 million
// columns and their statistics (out of memory under the fuzzer's limit). An empty cloud lists
// each field once.
TEST(Inspect, EmptyCloudWithAHugeCountListsEachFieldOnce) {
  sl::test::TempDir tmp;
  const std::string path = tmp.write("empty.pcd",
                                     "VERSION .7\nFIELDS normal x y z _ intensity\nSIZE 4 4 4 4 4 4\nTYPE F F F F U F\n"
                                     "COUNT 3000000 1 1 1 1 1\nWIDTH 0\nHEIGHT 1\nPOINTS 0\nDATA binary\n");
  const sl::InspectReport r = sl::inspect_file(path);
  EXPECT_EQ(r.points, 0);
  ASSERT_EQ(r.fields.size(), 5u);
  EXPECT_EQ(r.fields[0].name, "normal");
  EXPECT_EQ(r.fields[4].name, "intensity");
  EXPECT_TRUE(std::isnan(r.fields[0].min));
}
