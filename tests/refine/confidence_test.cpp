// The confidence of a refinement (refine/confidence.h) and its review layer (refine/review.h): the
// calibration recovers a known error model and is judged on samples it was not fitted on; a constant
// sigma passes overall and fails the deciles; calibration.json round-trips and bad files are refused
// by name; the gate moves across the line only, by shifts beyond k sigma, flags what is too uncertain
// and counts vertices without data; the errors are signed across and vertical; the review layer is
// GeoJSON with the before/after lines and the flagged vertices.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include <rapidjson/document.h>

#include "geometry/rng.h"
#include "graph/error.h"
#include "refine/confidence.h"
#include "refine/review.h"
#include "refine/review_page.h"

namespace sl {
namespace {

namespace fs = std::filesystem;

// Errors drawn from N(0, (a s)^2 + b^2) with spreads s spread over a decade.
std::vector<ConfidenceSample> drawn(uint64_t seed, int n, double a, double b, const std::string& category = "curbstone") {
  Rng rng(seed);
  std::vector<ConfidenceSample> out;
  for (int i = 0; i < n; ++i) {
    ConfidenceSample x;
    x.category = category;
    for (int axis = 0; axis < 2; ++axis) {
      const double s = std::exp(rng.uniform(std::log(0.004), std::log(0.06))) * (axis ? 0.5 : 1.0);
      x.spread[size_t(axis)] = s;
      x.error[size_t(axis)] = rng.normal(0, std::sqrt(a * a * s * s + b * b));
    }
    x.split = i % 2;
    out.push_back(x);
  }
  return out;
}

// Errors whose size over sigma differs from tile to tile by a known factor: the spread of the
// per-tile log scale, and what it lets a fit on those tiles promise.
TEST(Confidence, ScaleSpreadMeasuresHowMuchTheErrorsScaleDiffersFromTileToTile) {
  Calibration cal;
  cal.fits[""] = {AxisCalibration{0, 0.01}, AxisCalibration{0, 0.02}};  // sigma 1 cm across, 2 cm vertically
  std::vector<ConfidenceSample> xs;
  const int tiles = 10;
  for (int t = 0; t < tiles + 2; ++t)
    for (int i = 0; i < (t < tiles ? 50 : 5); ++i) {  // the last two tiles have too few vertices to count
      ConfidenceSample x;
      x.category = "curbstone:high";
      x.tile = t, x.split = t < tiles ? 0 : 1;
      const double f = std::exp(t % 2 ? 0.2 : -0.2);  // rms error / sigma: e^0.2 on odd tiles, e^-0.2 on even ones
      const double sign = i % 2 ? 1 : -1;
      x.error = {sign * 0.01 * f, sign * 0.02};      // vertically exactly sigma everywhere
      x.spread = {0.003 * (1 + i % 3), 0.001};       // the fit's sigma does not depend on it (a = 0)
      xs.push_back(x);
    }
  const ScaleSpread across = scale_spread(cal, xs, -1, kAcross);
  EXPECT_EQ(across.tiles, tiles);
  const double sd = 0.2 * std::sqrt(double(tiles) / (tiles - 1));  // the sample standard deviation of +-0.2
  EXPECT_NEAR(across.log_sd, sd, 1e-9);
  EXPECT_NEAR(across.share_2se, 100 * 2 * std::exp(-0.5) / std::sqrt(2 * M_PI) * 2 * sd / std::sqrt(double(tiles)), 1e-9);
  const ScaleSpread vertical = scale_spread(cal, xs, 0, kVertical);
  EXPECT_EQ(vertical.tiles, tiles);
  EXPECT_NEAR(vertical.log_sd, 0, 1e-12);
  // Only split 1's two small tiles: none counts.
  EXPECT_EQ(scale_spread(cal, xs, 1, kAcross).tiles, 0);
  EXPECT_EQ(scale_spread(cal, xs, 1, kAcross, 5).tiles, 2);
  const std::string text = scale_spread_text(cal, xs, 0, "clouds");
  EXPECT_NE(text.find("its 10 clouds pin the share within 1 sigma to +-"), std::string::npos) << text;
  EXPECT_NE(text.find("x1.23 and x1.00"), std::string::npos) << text;
  EXPECT_EQ(scale_spread_text(cal, xs, 1), "");
}

TEST(Confidence, TheFitRecoversAKnownErrorModelAndIsCalibratedOnSamplesItWasNotFittedOn) {
  const std::vector<ConfidenceSample> xs = drawn(17, 16000, 1.7, 0.006);
  const Calibration cal = fit_calibration(xs, 0);
  for (int axis = 0; axis < 2; ++axis) {
    EXPECT_NEAR(cal.of("curbstone")[size_t(axis)].a, 1.7, 0.12) << axis_name(axis);
    EXPECT_NEAR(cal.of("curbstone")[size_t(axis)].b, 0.006, 0.001) << axis_name(axis);
  }
  // Errors that do not grow with the spread: a constant sigma is fitted (a near 0).
  const AxisCalibration flat = fit_calibration(drawn(18, 8000, 0.0, 0.01), 0).of("")[kAcross];
  EXPECT_LT(flat.a * 0.06, 0.003) << "a " << flat.a;
  EXPECT_NEAR(flat.b, 0.01, 0.0005);
  const std::vector<CoverageRow> rows = coverage(cal, xs, 1);
  ASSERT_EQ(rows.size(), 4u);  // curbstone and all, two axes each
  for (const auto& r : rows) {
    EXPECT_EQ(r.n, 8000);
    EXPECT_NEAR(r.within1, 0.6827, 0.015) << r.category << " " << axis_name(r.axis);
    EXPECT_NEAR(r.within2, 0.9545, 0.01) << r.category << " " << axis_name(r.axis);
    ASSERT_EQ(r.deciles.size(), 10u);
    EXPECT_LT(r.deciles.front().sigma_hi, r.deciles.back().sigma_lo);
    EXPECT_TRUE(r.calibrated()) << to_text(rows);
  }
}

TEST(Confidence, AConstantSigmaOrOneThatIgnoresTheErrorsFailsAndTheFittedOnePasses) {
  const std::vector<ConfidenceSample> xs = drawn(5, 12000, 2.0, 0.002);
  double ss = 0;
  for (const auto& x : xs) ss += x.error[0] * x.error[0];
  const double rms = std::sqrt(ss / double(xs.size()));
  // A constant sigma (the rms error): one bin, whatever its overall share; never calibrated.
  Calibration constant;
  constant.fits[""] = {AxisCalibration{0, rms}, AxisCalibration{0, rms}};
  const CoverageRow across = coverage(constant, xs, -1)[0];
  ASSERT_EQ(across.axis, kAcross);
  EXPECT_EQ(across.deciles.size(), 1u);
  EXPECT_FALSE(across.calibrated());
  // A sigma that varies as much but ignores the errors (each vertex gets another's spread): its
  // lowest tenth covers too few errors and its highest too many.
  std::vector<ConfidenceSample> shuffled = xs;
  for (size_t i = 0; i < shuffled.size(); ++i) shuffled[i].spread = xs[(i * 7919) % xs.size()].spread;
  const Calibration fitted = fit_calibration(xs, 0);
  const CoverageRow blind = coverage(fitted, shuffled, 1)[0];
  ASSERT_EQ(blind.deciles.size(), 10u);
  EXPECT_FALSE(blind.calibrated());
  EXPECT_LT(blind.deciles.front().within1, 0.55);
  EXPECT_GT(blind.deciles.back().within1, 0.80);
  // The fitted one passes on the vertices it was not fitted on.
  const CoverageRow good = coverage(fitted, xs, 1)[0];
  EXPECT_TRUE(good.calibrated()) << to_text(coverage(fitted, xs, 1));
}

// The table says how far a tenth's share scatters by chance alone: one standard error of a 68.3% share
// over n / 10 vertices (sqrt(0.6827 * 0.3173 / 110) = 4.4 points at n = 1100, 14.7 at n = 100), and
// the row size at which +-5 points is two of them (10 * 0.6827 * 0.3173 / 0.025^2 = 3466).
TEST(Confidence, TheTableSaysHowFarATenthsShareScattersByChance) {
  std::vector<ConfidenceSample> xs = drawn(3, 1000, 1.5, 0.004, "curbstone");
  const std::vector<ConfidenceSample> few = drawn(4, 100, 1.5, 0.004, "line_thin");
  xs.insert(xs.end(), few.begin(), few.end());
  const std::string text = to_text(coverage(fit_calibration(xs, 0), xs, -1));
  EXPECT_NE(text.find("+-14.7 points (one standard error) in a row of 100 vertices, +-4.4 in one of 1100"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("a row needs about 3466 vertices"), std::string::npos) << text;
}

TEST(Confidence, ACategoryGetsItsOwnFitWhenItHasEnoughVerticesElseTheCommonOne) {
  std::vector<ConfidenceSample> xs = drawn(3, 4000, 1.0, 0.01, "curbstone");
  const std::vector<ConfidenceSample> few = drawn(4, 100, 3.0, 0.03, "road_border");  // 50 in split 0
  xs.insert(xs.end(), few.begin(), few.end());
  const Calibration cal = fit_calibration(xs, 0, 100);
  EXPECT_EQ(cal.fits.count("curbstone"), 1u);
  EXPECT_EQ(cal.fits.count("road_border"), 0u);
  EXPECT_EQ(&cal.of("road_border"), &cal.of(""));
  EXPECT_THROW(fit_calibration(xs, 7), Error);
  EXPECT_THROW(fit_axis({0.1}, {0.2}), Error);
  EXPECT_THROW(fit_axis({0.1, 0.2}, {0.2}), Error);
}

class ConfidenceFiles : public ::testing::Test {
 protected:
  fs::path dir = fs::temp_directory_path() / ("sl_confidence_" + std::to_string(::getpid()));
  void SetUp() override { fs::create_directories(dir); }
  void TearDown() override { fs::remove_all(dir); }
  std::string write(const std::string& name, const std::string& text) {
    const fs::path p = dir / name;
    std::ofstream(p) << text;
    return p.string();
  }
};

TEST_F(ConfidenceFiles, ACalibrationRoundTripsAndABadOneIsRefusedByNameAndReason) {
  Calibration cal;
  cal.note = "fitted on \"even\" tiles";
  cal.checkpoint = "step_00000990.safetensors";
  cal.fits[""] = {AxisCalibration{1.25, 0.0125}, AxisCalibration{0.5, 0.004}};
  cal.fits["line_thin:dashed"] = {AxisCalibration{2.5, 0.02}, AxisCalibration{0.75, 0.001}};
  const std::string p = (dir / "calibration.json").string();
  write_calibration(p, cal);
  const Calibration back = read_calibration(p);
  EXPECT_EQ(back.note, cal.note);
  EXPECT_EQ(back.checkpoint, cal.checkpoint);
  ASSERT_EQ(back.fits.size(), 2u);
  for (const auto& [k, f] : cal.fits)
    for (int a = 0; a < 2; ++a) {
      EXPECT_DOUBLE_EQ(back.fits.at(k)[size_t(a)].a, f[size_t(a)].a);
      EXPECT_DOUBLE_EQ(back.fits.at(k)[size_t(a)].b, f[size_t(a)].b);
    }
  auto refused = [&](const std::string& name, const std::string& text, const std::string& why) {
    const std::string path = write(name, text);
    try {
      read_calibration(path);
      ADD_FAILURE() << name << " was read";
    } catch (const Error& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find(path), std::string::npos) << m;
      EXPECT_NE(m.find(why), std::string::npos) << m;
    }
  };
  refused("a.json", "{\"format\": \"streamline calibration 1\", \"fits\": ", "not JSON");
  refused("b.json", "{\"fits\": {}}", "not a streamline calibration");
  refused("c.json", "{\"format\": \"streamline calibration 1\", \"fits\": {\"x\": {\"across\": {\"a\": 1, \"b\": 0.01}}}}",
          "\"vertical\" must be an object");
  refused("d.json",
          "{\"format\": \"streamline calibration 1\", \"fits\": {\"\": {\"across\": {\"a\": 1, \"b\": 0}, \"vertical\": {\"a\": 1, "
          "\"b\": 0.01}}}}",
          "b must be > 0");
  refused("e.json",
          "{\"format\": \"streamline calibration 1\", \"fits\": {\"x\": {\"across\": {\"a\": 1, \"b\": 0.1}, \"vertical\": {\"a\": -1, "
          "\"b\": 0.01}}}}",
          "must be a finite number >= 0");
  refused("f.json",
          "{\"format\": \"streamline calibration 1\", \"fits\": {\"x\": {\"across\": {\"a\": 1, \"b\": 0.1}, \"vertical\": {\"a\": 1, "
          "\"b\": 0.01}}}}",
          "no \"\" entry");
  // knots: written, read back, and refused when they are not pairs or fall
  cal.fits[""][kAcross].knots = {{0.002, 0.004}, {0.01, 0.009}, {0.03, 0.02}};
  write_calibration(p, cal);
  EXPECT_EQ(read_calibration(p).fits.at("")[kAcross].knots, cal.fits[""][kAcross].knots);
  EXPECT_TRUE(read_calibration(p).fits.at("")[kVertical].knots.empty());
  const std::string head = "{\"format\": \"streamline calibration 1\", \"fits\": {\"\": {\"vertical\": {\"a\": 1, \"b\": 0.01}, "
                           "\"across\": {\"a\": 1, \"b\": 0.01, \"knots\": ";
  refused("g.json", head + "[[0.01, 0.02], [0.005, 0.03]]}}}}", "the spreads must ascend and the sigmas must not fall");
  refused("h.json", head + "[[0.01, 0.02], [0.02, 0.01]]}}}}", "the sigmas must not fall");
  refused("i.json", head + "[[0.01, 0]]}}}}", "sigma > 0");
  refused("j.json", head + "{}}}}}", "must be an array");
}

// Sigma read from knots: linear between them, flat beyond the ends.
TEST(Confidence, KnotsAreLinearBetweenAndFlatBeyondTheEnds) {
  AxisCalibration f{1.0, 0.01, {{0.01, 0.02}, {0.03, 0.06}}};
  EXPECT_DOUBLE_EQ(f.sigma(0.0), 0.02);
  EXPECT_DOUBLE_EQ(f.sigma(0.01), 0.02);
  EXPECT_NEAR(f.sigma(0.02), 0.04, 1e-15);
  EXPECT_DOUBLE_EQ(f.sigma(0.03), 0.06);
  EXPECT_DOUBLE_EQ(f.sigma(1.0), 0.06);
  f.knots.clear();
  EXPECT_DOUBLE_EQ(f.sigma(0.0), 0.01);
}

// Errors whose scale grows as the square of the spread, with heavier tails than a Gaussian's where
// the spread is large: the (a, b) model (one Gaussian, sigma linear in the spread) misses tenths; the
// binned fit covers every tenth, on samples it was not fitted on. Shuffled spreads (a sigma that
// ignores the errors) still fail, and so does a constant sigma.
TEST(Confidence, TheBinnedFitCoversEveryTenthWhereTheLinearModelDoesNot) {
  Rng rng(23);
  std::vector<ConfidenceSample> xs;
  for (int i = 0; i < 40000; ++i) {
    ConfidenceSample x;
    x.category = "line_thin";
    for (int axis = 0; axis < 2; ++axis) {
      const double s = std::exp(rng.uniform(std::log(0.004), std::log(0.06)));
      const double scale = 0.002 + 20 * s * s;
      // a Gaussian where s is small; where it is large, one in ten errors from a 4x wider one
      const bool wide = s > 0.02 && rng.uniform(0, 1) < 0.1;
      x.spread[size_t(axis)] = s;
      x.error[size_t(axis)] = rng.normal(0, scale * (wide ? 4 : 1));
    }
    x.split = i % 2;
    xs.push_back(x);
  }
  const CoverageRow linear = coverage(fit_calibration(xs, 0, 100, false), xs, 1)[0];
  EXPECT_FALSE(linear.calibrated()) << to_text(coverage(fit_calibration(xs, 0, 100, false), xs, 1));
  const Calibration binned = fit_calibration(xs, 0);
  EXPECT_FALSE(binned.of("line_thin")[kAcross].knots.empty());
  for (const CoverageRow& r : coverage(binned, xs, 1)) EXPECT_TRUE(r.calibrated()) << to_text(coverage(binned, xs, 1));
  std::vector<ConfidenceSample> shuffled = xs;
  for (size_t i = 0; i < shuffled.size(); ++i) shuffled[i].spread = xs[(i * 7919) % xs.size()].spread;
  EXPECT_FALSE(coverage(binned, shuffled, 1)[0].calibrated());
  // too few samples for tenths of 20: the (a, b) model alone
  std::vector<ConfidenceSample> few(xs.begin(), xs.begin() + 300);
  EXPECT_TRUE(fit_calibration(few, 0, 100).of("")[kAcross].knots.empty());
}

// A map in a local frame: a curb along +x (y = 0), a marking at y = 5, a virtual line at y = 9.
SharedMap local_map(const fs::path& dir) {
  const fs::path p = dir / "map.geojson";
  std::ofstream(p) << R"({"type":"FeatureCollection","crs":{"type":"name","properties":{"name":"urn:ogc:def:crs:EPSG::32632"}},"features":[)"
                   << R"({"type":"Feature","properties":{"type":"curbstone"},"geometry":{"type":"LineString","coordinates":[[500000,5400000,1],[500005,5400000,1],[500010,5400000,1],[500015,5400000,1]]}},)"
                   << R"({"type":"Feature","properties":{"type":"line_thin"},"geometry":{"type":"LineString","coordinates":[[500000,5400005,1],[500010,5400005,1]]}})"
                   << "]}";
  return make_shared_map(read_vector_map(p.string()));
}

TEST_F(ConfidenceFiles, TheGateMovesAcrossOnlyBeyondKSigmaFlagsTheUncertainAndCountsVerticesWithoutData) {
  const SharedMap m = local_map(dir);
  const size_t nv = m.map.vertices.size();
  ASSERT_EQ(nv, 6u);
  const auto& curb = m.map.lines[0].vertex;
  Calibration cal;
  // sigma across = sqrt((2 s)^2 + 0.01^2); vertical sqrt(s^2 + 0.005^2).
  cal.fits[""] = {AxisCalibration{2.0, 0.01}, AxisCalibration{1.0, 0.005}};
  MapRefineReport rep;
  rep.spread.assign(nv, {0, 0, 0});
  rep.covered.assign(nv, 0);
  rep.on_clouds.assign(nv, 0);
  std::vector<Vec3d> d(nv, Vec3d{0, 0, 0});
  // Vertex 0: a large shift across (+y 0.2), along (+x 0.3) and up (0.004, within its sigma).
  // Vertex 1: a shift across of 0.015 m with sigma 0.0224 (spread 0.01): left as right.
  // Vertex 2: sigma across 0.2 m (spread 0.1): flagged whatever its shift.
  // Vertex 3: on the clouds, not covered: no data.
  for (uint32_t v : curb) rep.on_clouds[v] = 1;
  for (int k = 0; k < 3; ++k) rep.covered[curb[size_t(k)]] = 1;
  rep.spread[curb[0]] = {0.5, 0.0, 0.01};
  d[curb[0]] = {0.3, 0.2, 0.004};
  rep.spread[curb[1]] = {0, 0.01, 0};
  d[curb[1]] = {0, 0.015, 0.02};
  rep.spread[curb[2]] = {0, 0.1, 0};
  d[curb[2]] = {0, 0.5, 0};
  GateOptions opt;
  opt.k = 1.0, opt.flag_sigma = 0.1;
  const GateResult g = gate_moves(m.map, d, rep, cal, opt, {"curbstone"});
  EXPECT_EQ(g.fate[curb[0]], VertexFate::Moved);
  EXPECT_DOUBLE_EQ(g.d[curb[0]][0], 0.0) << "never along the line";
  EXPECT_NEAR(g.d[curb[0]][1], 0.2, 1e-12);
  EXPECT_EQ(g.d[curb[0]][2], 0.0) << "0.004 m up is within sigma vertical 0.0112";
  EXPECT_NEAR(g.sigma[curb[0]][0], 0.01, 1e-12);
  EXPECT_EQ(g.fate[curb[1]], VertexFate::Moved) << "0.02 m up is beyond sigma vertical 0.005";
  EXPECT_EQ(g.d[curb[1]][1], 0.0) << "0.015 m across is within sigma across 0.0224";
  EXPECT_EQ(g.d[curb[1]][2], 0.02);
  EXPECT_EQ(g.fate[curb[2]], VertexFate::Flagged);
  EXPECT_NEAR(g.d[curb[2]][1], 0.5, 1e-12) << "flagged, and 0.5 m across is beyond its sigma 0.2: moved all the same";
  d[curb[2]] = {0, 0.15, 0};
  const GateResult within = gate_moves(m.map, d, rep, cal, opt, {"curbstone"});
  EXPECT_EQ(within.fate[curb[2]], VertexFate::Flagged);
  EXPECT_EQ(within.d[curb[2]], (Vec3d{0, 0, 0})) << "0.15 m is within its sigma: left, and flagged";
  EXPECT_EQ(g.fate[curb[3]], VertexFate::NoData);
  for (uint32_t v : m.map.lines[1].vertex) EXPECT_EQ(g.fate[v], VertexFate::Untouched);
  // With k = 2 the first vertex's vertical stays, and a larger k leaves the second as right.
  opt.k = 5;
  const GateResult strict = gate_moves(m.map, d, rep, cal, opt, {"curbstone"});
  EXPECT_EQ(strict.fate[curb[1]], VertexFate::Left);
  // The tally over passes and the counts (a vertex the last pass moved further than `unsettled` is
  // flagged: here 1 m, so none; then 0.1 m, and vertex 0's 0.2 m move flags it).
  GateTally tally(1.0);
  tally.add(g);
  const std::vector<VertexFate> fates = tally.fates(g.d);
  GateTally restless(0.1);
  restless.add(g);
  EXPECT_EQ(restless.fates(g.d)[curb[0]], VertexFate::Flagged);
  EXPECT_EQ(restless.fates(g.d)[curb[1]], VertexFate::Moved);
  restless.add(strict);  // a second pass that moves vertex 0 by its 0.2 m again: still unsettled
  EXPECT_EQ(restless.fates(g.d)[curb[0]], VertexFate::Flagged);
  GateResult still = strict;
  still.d[curb[0]] = {0, 0.01, 0};  // a last pass that moves it 1 cm: settled
  restless.add(still);
  EXPECT_EQ(restless.fates(g.d)[curb[0]], VertexFate::Moved);
  const FateCounts c = count_fates(m.map, fates, {"curbstone"});
  const auto& all = c.by.at("\x7f" "all");
  EXPECT_EQ(all[size_t(VertexFate::Moved)], 2) << "the flagged vertex moved too, and counts as flagged";
  EXPECT_EQ(all[size_t(VertexFate::Flagged)], 1);
  EXPECT_EQ(all[size_t(VertexFate::NoData)], 1);
  EXPECT_NE(to_text(c).find("curbstone"), std::string::npos);
  // Mismatched sizes are refused.
  rep.spread.pop_back();
  EXPECT_THROW(gate_moves(m.map, d, rep, cal, opt, {"curbstone"}), Error);
}

TEST_F(ConfidenceFiles, ErrorsAreSignedAcrossTheLineAndVertical) {
  const SharedMap truth = local_map(dir);
  std::vector<Vec3d> d(truth.map.vertices.size(), Vec3d{0, 0, 0});
  Rng rng(9);
  std::vector<std::array<double, 2>> want(d.size());
  for (uint32_t v : truth.map.lines[0].vertex) {
    d[v] = {rng.uniform(-0.4, 0.4), rng.uniform(-0.3, 0.3), rng.uniform(-0.1, 0.1)};
    want[v] = {d[v][1], d[v][2]};  // the curb runs along +x: its left normal is +y
  }
  VectorMap moved = truth.map;
  for (size_t v = 0; v < d.size(); ++v)
    for (int c = 0; c < 3; ++c) moved.vertices[v].world[c] += d[v][c];
  for (auto& l : moved.lines)
    for (size_t k = 0; k < l.vertex.size(); ++k) l.points[k] = moved.vertices[l.vertex[k]].world;
  const VertexFrame frames = vertex_frames(truth.map, {"curbstone"});
  const auto e = vertex_errors(truth.map, moved, frames);
  for (uint32_t v : truth.map.lines[0].vertex) {
    const double x = moved.vertices[v].world[0];
    if (x < 500000 || x > 500015) continue;  // beyond the line's ends the distance is to an end point
    EXPECT_NEAR(e[v][0], want[v][0], 1e-6);
    EXPECT_NEAR(e[v][1], want[v][1], 1e-6);
  }
}

TEST_F(ConfidenceFiles, TheReviewLayerHoldsTheChangedLinesBeforeAndAfterAndTheFlaggedVertices) {
  const SharedMap m = local_map(dir);
  const auto& curb = m.map.lines[0].vertex;
  const size_t nv = m.map.vertices.size();
  std::vector<Vec3d> d(nv, Vec3d{0, 0, 0});
  d[curb[0]] = {0, 0.25, 0};
  GateResult g;
  g.d = d;
  g.fate.assign(nv, VertexFate::Untouched);
  g.sigma.assign(nv, {0.02, 0.01});
  g.shift.assign(nv, {0.25, 0});
  g.fate[curb[0]] = VertexFate::Moved;
  g.fate[curb[1]] = VertexFate::Left;
  g.fate[curb[2]] = VertexFate::Flagged;
  g.sigma[curb[2]] = {0.3, 0.05};
  GateTally tally(1.0);
  tally.add(g);
  ReviewCounts rc;
  const std::string text =
      review_geojson(m.map, d, tally.fates(d), tally, {"curbstone", "line_thin"}, GateOptions{}, "test", &rc);
  EXPECT_EQ(rc.lines, 1);
  EXPECT_EQ(rc.flagged_vertices, 1);
  rapidjson::Document doc;
  doc.Parse(text.c_str());
  ASSERT_FALSE(doc.HasParseError()) << text;
  ASSERT_TRUE(doc["features"].IsArray());
  ASSERT_EQ(doc["features"].Size(), 3u) << text;
  const auto& after = doc["features"][0];
  EXPECT_STREQ(after["properties"]["streamline:state"].GetString(), "refined");
  EXPECT_STREQ(after["properties"]["streamline:review"].GetString(), "pending");
  EXPECT_TRUE(after["properties"].HasMember("fixme"));
  EXPECT_STREQ(doc["features"][1]["properties"]["streamline:state"].GetString(), "given");
  // The map is in UTM 32N: the layer is in WGS 84 longitude, latitude (about 9 E, 48.7 N); the refined
  // line's first vertex lies 0.25 m north of the given one.
  const auto& a0 = after["geometry"]["coordinates"][0];
  const auto& b0 = doc["features"][1]["geometry"]["coordinates"][0];
  EXPECT_NEAR(a0[0].GetDouble(), 9.0, 0.01);
  EXPECT_NEAR(a0[1].GetDouble(), 48.75, 0.05);
  EXPECT_NEAR((a0[1].GetDouble() - b0[1].GetDouble()) * 111200.0, 0.25, 0.005);
  const auto& point = doc["features"][2];
  EXPECT_STREQ(point["geometry"]["type"].GetString(), "Point");
  EXPECT_NEAR(point["properties"]["streamline:sigma_across_m"].GetDouble(), 0.3, 1e-9);
  EXPECT_NE(std::string(point["properties"]["fixme"].GetString()).find("too uncertain"), std::string::npos);

  // A move undone to keep a lanelet valid (lanelet_check.h), in an ungated run (no tally): the
  // vertex is flagged with that reason, its sigma 0.
  std::vector<VertexFate> fates(nv, VertexFate::Untouched);
  fates[curb[0]] = VertexFate::Moved;
  fates[curb[1]] = VertexFate::Flagged;
  std::vector<std::string> why(nv);
  why[curb[1]] = "kept as given: the moves made lanelet 7 invalid (x)";
  const std::string ungated = review_geojson(m.map, d, fates, GateTally{}, {"curbstone"}, GateOptions{}, "test", &rc, &why);
  rapidjson::Document u;
  u.Parse(ungated.c_str());
  ASSERT_FALSE(u.HasParseError()) << ungated;
  ASSERT_EQ(u["features"].Size(), 3u) << ungated;
  EXPECT_STREQ(u["features"][2]["properties"]["fixme"].GetString(), why[curb[1]].c_str());
  EXPECT_EQ(u["features"][2]["properties"]["streamline:sigma_across_m"].GetDouble(), 0.0);
  // A sparse segment: a LineString as refined, its bend, a fixme asking for vertices; apply-review
  // reads only the refined lines, so it is not a decision.
  const std::vector<SparseSpan> sparse = {SparseSpan{0, 1, 12, -0.08, 0.11}};
  const std::string with_sparse =
      review_geojson(m.map, d, fates, GateTally{}, {"curbstone"}, GateOptions{}, "test", &rc, &why, &sparse);
  EXPECT_EQ(rc.sparse_segments, 1);
  rapidjson::Document w;
  w.Parse(with_sparse.c_str());
  ASSERT_FALSE(w.HasParseError()) << with_sparse;
  ASSERT_EQ(w["features"].Size(), 4u) << with_sparse;
  const auto& seg = w["features"][3];
  EXPECT_STREQ(seg["properties"]["streamline:state"].GetString(), "sparse");
  EXPECT_EQ(seg["geometry"]["coordinates"].Size(), 2u);
  EXPECT_EQ(seg["properties"]["streamline:segment"].GetInt(), 1);
  EXPECT_NEAR(seg["properties"]["streamline:bend_m"].GetDouble(), -0.08, 1e-9);
  EXPECT_NE(std::string(seg["properties"]["fixme"].GetString()).find("0.080 m on average (up to 0.110 m) right of this segment"),
            std::string::npos)
      << seg["properties"]["fixme"].GetString();
  const std::vector<SparseSpan> stray = {SparseSpan{0, 99, 12, 0.08, 0.1}};
  EXPECT_THROW(review_geojson(m.map, d, fates, GateTally{}, {"curbstone"}, GateOptions{}, "test", &rc, &why, &stray), Error);
  std::vector<std::string> short_why(1);
  EXPECT_THROW(review_geojson(m.map, d, fates, GateTally{}, {"curbstone"}, GateOptions{}, "test", &rc, &short_why), Error);
}

// review.html lists infer's further findings (sparse segments, lanelets kept valid) under its counts,
// escaped, and has no such list without them.
TEST_F(ConfidenceFiles, TheReviewPageListsFurtherFindingsUnderItsCounts) {
  const SharedMap m = local_map(dir);
  const size_t nv = m.map.vertices.size();
  const std::vector<Vec3d> d(nv, Vec3d{0, 0, 0});
  const std::vector<VertexFate> fates(nv, VertexFate::Untouched);
  const GateTally tally;
  ReviewPageInput in;
  in.map = &m.map, in.d = &d, in.fates = &fates, in.tally = &tally, in.categories = {"curbstone"};
  in.layer = "r.review.geojson";
  EXPECT_EQ(review_html(in).find("id=\"notes\""), std::string::npos);
  in.notes = {"lanelet 300: its left bound (way 1 (a<b)) crosses itself", "2 segment(s) the points bend away from"};
  const std::string page = review_html(in);
  EXPECT_NE(page.find("<ul id=\"notes\"><li>lanelet 300: its left bound (way 1 (a&lt;b)) crosses itself</li><li>2 segment(s)"),
            std::string::npos)
      << page;
}

}  // namespace
}  // namespace sl
