// The origin of a cloud (formats/clouds/origin.h): the auto rule, the readers' subtraction in double
// for every format against a plain reference on random world coordinates, the lines shifted
// alike and written back exactly, and the one warning for coordinates stored as float32 too far
// out.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>
#include <random>
#include <set>

#include "graph/atomic_file.h"
#include "graph/engine.h"
#include "graph/error.h"
#include "graph/spec.h"
#include "formats/clouds/formats.h"
#include "formats/clouds/kitti.h"
#include "formats/maps/lines_json.h"
#include "formats/clouds/origin.h"
#include "formats/clouds/pcd.h"
#include "formats/clouds/ply.h"
#include "tests/formats/clouds/io_test_util.h"

namespace sl {
namespace {

TEST(Origin, AutoIsTheMinimumRoundedDownTo100MetresPerAxisAndZeroWithoutPoints) {
  Bounds b;
  EXPECT_EQ(grid_origin(b), (Vec3d{0, 0, 0}));
  b.add(500012.5, 5400000.0, -3.25);
  b.add(500099.9, 5400150.0, 12.0);
  EXPECT_EQ(grid_origin(b), (Vec3d{500000, 5400000, -100}));
  b.add(-0.001, 5399999.999, 100.0);
  EXPECT_EQ(grid_origin(b), (Vec3d{-100, 5399900, -100}));
  // Non-finite values are left out per axis; an axis with none gets 0.
  Bounds c;
  c.add(NAN, 250, INFINITY);
  EXPECT_EQ(grid_origin(c), (Vec3d{0, 200, 0}));
  EXPECT_EQ(resolve_origin(OriginPolicy::at({1.5, 2, 3}), b), (Vec3d{1.5, 2, 3}));
  EXPECT_EQ(resolve_origin(OriginPolicy::auto_rule(), b), grid_origin(b));
}

TEST(Origin, FloatBoundsMatchAPlainLoopOnRandomColumnsWithNonFiniteValues) {
  std::mt19937 rng(4);
  std::uniform_real_distribution<float> u(-5000.f, 5000.f);
  for (int trial = 0; trial < 50; ++trial) {
    const size_t n = 1 + rng() % 67;
    std::vector<float> c[3];
    for (auto& col : c)
      for (size_t i = 0; i < n; ++i) {
        const unsigned k = rng() % 13;
        col.push_back(k == 0 ? NAN : k == 1 ? INFINITY : k == 2 ? -INFINITY : u(rng));
      }
    const Bounds got = float_bounds(c[0].data(), c[1].data(), c[2].data(), n);
    Bounds want;
    for (size_t i = 0; i < n; ++i) want.add(c[0][i], c[1][i], c[2][i]);
    for (int a = 0; a < 3; ++a) {
      EXPECT_EQ(got.has(a), want.has(a));
      if (want.has(a)) {
        EXPECT_EQ(got.lo[a], want.lo[a]);
        EXPECT_EQ(got.hi[a], want.hi[a]);
      }
    }
  }
}

TEST(Origin, ParseOriginTakesAutoOrThreeNumbersAndRefusesAnythingElse) {
  EXPECT_TRUE(parse_origin("auto", "w").automatic);
  EXPECT_EQ(parse_origin("500000,5400000,0", "w").fixed, (Vec3d{500000, 5400000, 0}));
  EXPECT_EQ(parse_origin("[1.5, -2, +3e2]", "w").fixed, (Vec3d{1.5, -2, 300}));
  for (const char* bad : {"", "1,2", "1,2,3,4", "a,b,c", "nan,0,0", "1,,3", "Auto"}) {
    try {
      parse_origin(bad, "--origin");
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("--origin: expected \"auto\" or three numbers"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(OriginPolicy::at({500000.25, 0.1, -7}).describe(), "[500000.25, 0.1, -7]");
}

// The readers' "origin" param: "auto" or [x, y, z], checked when the pipeline is parsed.
TEST(Origin, TheReaderParamTakesAutoOrThreeNumbersAndSaysWhatIsWrongWithAnythingElse) {
  auto error_of = [](const std::string& origin) {
    const std::string text = R"({"name": "o", "stages": [{"id": "scan", "type": "scan_dataset", "params": {"root": "x"}},
      {"id": "read", "type": "read_cloud", "params": {"origin": )" + origin + R"(}},
      {"id": "split", "type": "split_lines"}, {"id": "s", "type": "null_sink"}]})";
    try {
      const PipelineSpec spec = parse_pipeline(text, "o.json");
      return "ok " + origin_of(spec.params(1)).describe();
    } catch (const Error& e) {
      return std::string(e.what());
    }
  };
  EXPECT_EQ(error_of("\"auto\""), "ok auto");
  EXPECT_EQ(error_of("[500000, 5400000.5, -1]"), "ok [500000, 5400000.5, -1]");
  EXPECT_EQ(error_of("[1, 2]"), "o.json: /stages/1/params/origin: expected 3 numbers, got 2");
  EXPECT_EQ(error_of("[1, \"a\", 3]"), "o.json: /stages/1/params/origin/1: expected a number, got string \"a\"");
  EXPECT_NE(error_of("\"autp\"").find("/stages/1/params/origin: 'autp' is not one of auto (or an array of 3 numbers)"),
            std::string::npos)
      << error_of("\"autp\"");
  EXPECT_NE(error_of("true").find("/stages/1/params/origin: expected auto or an array of 3 numbers, got"), std::string::npos)
      << error_of("true");
}

// World coordinates near UTM with random shifts (not multiples of 100), a few NaN points.
PointCloud world_cloud(uint32_t seed, Vec3d* lo_out, std::vector<std::array<double, 3>>* world) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-150, 150), shift(-1e6, 6e6);
  const Vec3d base{std::floor(shift(rng)), std::floor(shift(rng)), std::floor(u(rng))};
  PointCloud c;
  c.fields = {"x", "y", "z", "intensity"};
  c.columns.assign(4, {});
  c.origin = base;
  Vec3d lo{INFINITY, INFINITY, INFINITY};
  for (int i = 0; i < 400; ++i) {
    float v[3];
    for (float& x : v) x = float(u(rng));
    if (i % 97 == 5) v[1] = NAN;
    for (int a = 0; a < 3; ++a) c.columns[size_t(a)].push_back(v[a]);
    c.columns[3].push_back(float(i % 17) / 16.f);
    std::array<double, 3> w;
    for (int a = 0; a < 3; ++a) w[size_t(a)] = double(v[a]) + base[size_t(a)];
    if (std::isfinite(v[1]))
      for (int a = 0; a < 3; ++a) lo[size_t(a)] = std::min(lo[size_t(a)], w[size_t(a)]);
    world->push_back(w);
  }
  *lo_out = lo;
  return c;
}

// Every format that stores wide coordinates (PCD F 8 in each DATA mode, PLY double ascii and
// binary): read back with the auto origin, the columns are float(world - origin) with origin the
// grid of the kept points' minimum; with a fixed origin, float(world - that).
TEST(Origin, WideCoordinatesAreMovedInDoubleBeforeTheyBecomeFloat32InEveryReader) {
  test::TempDir tmp;
  for (uint32_t seed = 1; seed <= 6; ++seed) {
    Vec3d lo;
    std::vector<std::array<double, 3>> world;
    const PointCloud c = world_cloud(seed, &lo, &world);
    const Vec3d want_origin{std::floor(lo[0] / 100) * 100, std::floor(lo[1] / 100) * 100, std::floor(lo[2] / 100) * 100};
    struct Case {
      std::string name;
      std::function<void(const std::string&)> write;
      std::function<PointCloud(const std::string&, const OriginPolicy&)> read;
    };
    const std::vector<Case> cases = {
        {"a.pcd", [&](const std::string& p) { write_pcd(p, c, PcdDataMode::Ascii); },
         [](const std::string& p, const OriginPolicy& o) { return read_cloud_file(p, {true, o}); }},
        {"b.pcd", [&](const std::string& p) { write_pcd(p, c, PcdDataMode::Binary); },
         [](const std::string& p, const OriginPolicy& o) { return read_cloud_file(p, {true, o}); }},
        {"c.pcd", [&](const std::string& p) { write_pcd(p, c, PcdDataMode::BinaryCompressed); },
         [](const std::string& p, const OriginPolicy& o) { return read_cloud_file(p, {true, o}); }},
        {"d.ply", [&](const std::string& p) { write_ply(p, c, false); },
         [](const std::string& p, const OriginPolicy& o) { return read_cloud_file(p, {true, o}); }},
        {"e.ply", [&](const std::string& p) { write_ply(p, c, true); },
         [](const std::string& p, const OriginPolicy& o) { return read_cloud_file(p, {true, o}); }},
    };
    for (const Case& k : cases) {
      const std::string path = tmp.path(k.name);
      k.write(path);
      for (const OriginPolicy& pol : {OriginPolicy::auto_rule(), OriginPolicy::at({123.5, -7, 40})}) {
        const PointCloud r = k.read(path, pol);
        const Vec3d o = pol.automatic ? want_origin : pol.fixed;
        ASSERT_EQ(r.origin, o) << k.name << " seed " << seed;
        size_t j = 0;
        for (const auto& w : world) {
          if (!std::isfinite(w[1])) continue;  // dropped
          ASSERT_LT(j, r.size()) << k.name;
          for (int a = 0; a < 3; ++a)
            ASSERT_EQ(r.columns[size_t(a)][j], float(w[size_t(a)] - o[size_t(a)])) << k.name << " point " << j;
          ++j;
        }
        EXPECT_EQ(j, r.size()) << k.name;
      }
    }
  }
}

// Coordinates stored as float32 (PCD F 4, PLY float, KITTI, nuScenes): the same auto rule on the
// stored values, the subtraction correctly rounded, and the extent reported for the warning.
TEST(Origin, Float32CoordinatesGetTheSameRuleAndTheirExtentIsReported) {
  test::TempDir tmp;
  PointCloud c = test::random_cloud(300, {"x", "y", "z", "intensity"}, 3);
  for (float& v : c.columns[0]) v += 5e5f;  // far out: coarse as float32
  for (const char* name : {"f.pcd", "f.ply", "f.bin", "f.pcd.bin"}) {
    const std::string path = tmp.path(name);
    format_of_path(path)->write(path, c);
    DecodeInfo info;
    const PointCloud r = read_cloud_file(path, {}, &info);
    Bounds b;
    for (size_t i = 0; i < c.size(); ++i) b.add(c.columns[0][i], c.columns[1][i], c.columns[2][i]);
    EXPECT_EQ(r.origin, grid_origin(b)) << name;
    for (size_t i = 0; i < c.size(); ++i)
      for (int a = 0; a < 3; ++a)
        ASSERT_EQ(r.columns[size_t(a)][i], float(double(c.columns[size_t(a)][i]) - r.origin[size_t(a)])) << name;
    EXPECT_GT(info.float32_extent, 5e5 - 101) << name;
    EXPECT_TRUE(info.coarse()) << name;
    EXPECT_NE(coarse_warning(path, info).find(path + ": coordinates stored as float32 reach"), std::string::npos);
  }
  // Stored wide, nothing to warn about; near the sensor, neither.
  c.origin = {0, 0, 0};
  for (float& v : c.columns[0]) v -= 5e5f;
  const std::string near = tmp.path("near.pcd");
  write_pcd(near, c, PcdDataMode::Binary);
  DecodeInfo info;
  read_cloud_file(near, {}, &info);
  EXPECT_FALSE(info.coarse());
  EXPECT_LE(info.float32_extent, 100.0);
}

// An origin that puts a point beyond float's range (a span near 3.4e38 m) drops that point,
// counted, as the readers drop other non-finite points; with drop_nan off it stays, infinite.
TEST(Origin, PointsTheOriginMovesBeyondFloatRangeAreDroppedAndCounted) {
  test::TempDir tmp;
  PointCloud c;
  c.fields = {"x", "y", "z", "intensity"};
  c.columns = {{-3e38f, 3e38f, 1.f, 2.f}, {0, 1, 2, 3}, {0, 0, 0, 0}, {1, 1, 1, 1}};
  const std::string path = tmp.path("wide.pcd");
  write_pcd(path, c, PcdDataMode::Binary);
  DecodeInfo info;
  const PointCloud r = read_cloud_file(path, {}, &info);
  EXPECT_EQ(info.dropped, 1);  // 3e38 - (-3e38 rounded down) overflows float
  ASSERT_EQ(r.size(), 3u);
  for (size_t i = 0; i < r.size(); ++i) EXPECT_TRUE(std::isfinite(r.columns[0][i]));
  EXPECT_EQ(r.columns[1], (std::vector<float>{0, 2, 3}));
  const PointCloud kept = read_cloud_file(path, {false, OriginPolicy::auto_rule()}, &info);
  EXPECT_EQ(kept.size(), 4u);
  EXPECT_EQ(kept.columns[0][1], INFINITY);
}

// Lines JSON: the world coordinates (doubles, correctly rounded) minus the origin in double; with
// an origin, written back as world coordinates that read back to exactly the same doubles.
TEST(Origin, LinesAreShiftedInDoubleAndWrittenBackExactly) {
  test::TempDir tmp;
  const std::string text =
      R"({"frame": "s", "lines": [{"id": 3, "category": "curb", "points": [[500123.4567891234, 5400001.25, 101.125],
          [500124.0000000001, 5400002.875, 101.0]]}]})";
  const Vec3d o{500100, 5400000, 100};
  const LinesFile lf = parse_lines_json(text, "s.json", {}, 100000, o);
  ASSERT_EQ(lf.lines.size(), 1u);
  EXPECT_EQ(lf.origin, o);
  EXPECT_EQ(lf.lines[0].points[0][0], float(500123.4567891234 - 500100.0));
  EXPECT_EQ(lf.lines[0].points[0][1], 1.25f);
  EXPECT_EQ(lf.lines[0].points[1][2], 1.0f);
  // A float32 at 5.4e6 m has 0.5 m steps: read without the origin, 5400001.25 would be 5400001.
  EXPECT_EQ(parse_lines_json(text, "s.json").lines[0].points[0][1], 5400001.0f);
  const std::string out = tmp.path("w.json");
  write_lines_json(out, lf);
  const LinesFile back = read_lines_json(out, {}, 100000, o);
  EXPECT_EQ(back.lines[0].points, lf.lines[0].points);
  // The text holds local + origin exactly: 5400001.25 and 500123.45678912342 (the float's value).
  const std::string w = read_file(out);
  EXPECT_NE(w.find("5400001.25"), std::string::npos) << w;
  EXPECT_NE(w.find(exact_number(double(lf.lines[0].points[0][0]) + 500100.0)), std::string::npos) << w;
  // An origin that leaves a coordinate beyond float's range is the usual error.
  EXPECT_THROW(parse_lines_json(text, "s.json", {}, 100000, {-1e39, 0, 0}), Error);
}

// One warning per coarse file and run: two epochs, two scenes (one coarse), the summary names
// the coarse file once.
TEST(Origin, ACoarseFloat32CloudIsWarnedAboutOncePerFileAndRunWhateverTheEpochs) {
  test::TempDir tmp;
  std::filesystem::create_directories(tmp.path("ds"));
  PointCloud c = test::random_cloud(2000, {"x", "y", "z", "intensity"}, 5);
  for (auto& v : c.columns[3]) v = std::fabs(v) / 100.f;
  write_pcd(tmp.path("ds/a.pcd"), c, PcdDataMode::Binary);
  for (float& v : c.columns[1]) v += 5.4e6f;
  write_pcd(tmp.path("ds/b.pcd"), c, PcdDataMode::Binary);
  for (const char* s : {"a", "b"}) {
    LinesFile lf;
    lf.frame = s;
    const float y0 = std::string(s) == "b" ? 5.4e6f : 0.f;
    lf.lines.push_back({0, "curb", {{-50, y0, 0}, {50, y0, 0}}});
    write_lines_json(tmp.path(std::string("ds/") + s + ".json"), lf);
  }
  const std::string pipeline = R"({"name": "w", "seed": 1, "epochs": 3, "stages": [
    {"id": "scan", "type": "scan_dataset", "params": {"root": ")" + tmp.path("ds") + R"("}},
    {"id": "read", "type": "read_cloud", "params": {"cache_mb": 0}},
    {"id": "lines", "type": "read_lines_json"},
    {"id": "split", "type": "split_lines"},
    {"id": "sink", "type": "null_sink"}]})";
  RunOptions opt;
  opt.quiet = true;
  const RunResult r = run_pipeline(parse_pipeline(pipeline, "w.json"), opt);
  ASSERT_TRUE(r.ok) << r.error;
  int warnings = 0;
  for (const auto& s : r.summaries)
    if (s.rfind("warning: ", 0) == 0) {
      ++warnings;
      EXPECT_NE(s.find(tmp.path("ds/b.pcd") + ": coordinates stored as float32 reach 5400"), std::string::npos) << s;
    }
  EXPECT_EQ(warnings, 1);
}

}  // namespace
}  // namespace sl
