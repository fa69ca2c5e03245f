// The acceptance test of world coordinates (issue 23): the same generated scenes stored once in
// the sensor frame near (0, 0, 0) and once moved into UTM (easting +5e5 m, northing +5.4e6 m)
// -- as a float64 PCD, and as LAS -- with their lines moved alike, give the same samples through
// the real pipeline stages (scan, read_cloud, read_lines_json, split, perturb, crop, resample,
// center, write_samples): every context point, noisy line and target offset to 1 mm, and the
// same skips. Without the origin (the stored coordinates as float32) they do not.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "data/gen.h"
#include "graph/engine.h"
#include "graph/spec.h"
#include "dataset/sample_cache.h"
#include "tests/formats/clouds/io_test_util.h"
#include "tests/train/tiny_dataset.h"

namespace sl {
namespace {

constexpr std::array<double, 3> kUtm{500000, 5400000, 0};  // a multiple of 100 m on every axis

struct Samples {
  std::vector<float> context, noisy, target;  // [N,P,4], [N,L,3], [N,L,3]
  std::vector<int32_t> scene, line;
  std::vector<SkipRecord> skips;
  int64_t n = 0;
};

// The preprocessing of the training pipeline, read_cloud with each file's format, into a cache.
Samples samples_of(const std::string& root, const std::string& format, const std::string& origin,
                   const std::string& out) {
  const std::string pipeline = R"({"name": "utm", "seed": 11, "epochs": 1, "stages": [
    {"id": "scan", "type": "scan_dataset", "params": {"root": ")" + root + R"(", "format": ")" + format + R"("}},
    {"id": "read", "type": "read_cloud", "params": {"origin": )" + origin + R"(}},
    {"id": "lines", "type": "read_lines_json", "params": {"categories": ["lane_marking", "curb"]}},
    {"id": "split", "type": "split_lines", "params": {"max_length": 10}},
    {"id": "perturb", "type": "perturb_line", "params": {"points": 32, "lateral_sigma": 0.3}},
    {"id": "crop", "type": "crop_polyline", "params": {"radius": 2.0, "around": "noisy_line"}},
    {"id": "resample", "type": "resample", "params": {"points": 256}},
    {"id": "center", "type": "center", "params": {"rotate": true, "frame_from": "noisy_line"}},
    {"id": "write", "type": "write_samples", "params": {"path": ")" + out + R"("}}]})";
  RunOptions opt;
  opt.threads = 2;
  opt.quiet = true;
  const RunResult r = run_pipeline(parse_pipeline(pipeline, "utm.json"), opt);
  EXPECT_TRUE(r.ok) << r.error;
  Samples s;
  s.skips = r.skips;
  const SampleCache c = SampleCache::open(out, {"context", "noisy_line", "target_offset"});
  s.n = c.size();
  for (int64_t i = 0; i < c.size(); ++i) {
    Sample x;
    c.fill(i, &x);
    const auto add = [](std::vector<float>& to, const Tensor& t) { to.insert(to.end(), t.data.begin(), t.data.end()); };
    add(s.context, x.at("context"));
    add(s.noisy, x.at("noisy_line"));
    add(s.target, x.at("target_offset"));
    s.scene.push_back(int32_t(x.scene_index));
    s.line.push_back(int32_t(x.line_index));
  }
  return s;
}

// The largest difference of the coordinates (context: x y z of every point; lines: all).
float max_diff(const std::vector<float>& a, const std::vector<float>& b, int stride, int coords) {
  float m = 0;
  for (size_t i = 0; i < a.size(); ++i)
    if (int(i % size_t(stride)) < coords) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

std::vector<std::string> skip_lines(const Samples& s) {
  std::vector<std::string> v;
  for (const auto& k : s.skips) v.push_back(k.stage + " | " + k.item + " | " + k.reason);
  std::sort(v.begin(), v.end());
  return v;
}

void expect_same_samples(const Samples& a, const Samples& b, const std::string& what) {
  ASSERT_GT(a.n, 20) << what;
  ASSERT_EQ(a.n, b.n) << what;
  EXPECT_EQ(a.scene, b.scene) << what;
  EXPECT_EQ(a.line, b.line) << what;
  EXPECT_LE(max_diff(a.context, b.context, 4, 3), 1e-3f) << what;
  // Intensity is not a coordinate: the same stored values, the same floats.
  float di = 0;
  for (size_t i = 3; i < a.context.size(); i += 4) di = std::max(di, std::fabs(a.context[i] - b.context[i]));
  EXPECT_EQ(di, 0.f) << what;
  EXPECT_LE(max_diff(a.noisy, b.noisy, 3, 3), 1e-3f) << what;
  EXPECT_LE(max_diff(a.target, b.target, 3, 3), 1e-3f) << what;
  // The same skips (recorded in the order the threads met them: compared as sets).
  EXPECT_GT(a.skips.size(), 0u) << what << ": the scenes should have pieces far from the sensor that crop skips";
  EXPECT_EQ(skip_lines(a), skip_lines(b)) << what;
}

GenConfig scenes(const std::string& format, std::array<double, 3> offset) {
  GenConfig g = test::tiny_dataset(23, 3, 0);
  g.cloud_format = format;
  g.offset = offset;
  return g;
}

TEST(UtmEquivalence, Float64PcdInUtmGivesTheSamplesOfTheFloat32SceneNearTheOrigin) {
  test::TempDir tmp;
  generate_dataset(tmp.path("near"), scenes("pcd", {0, 0, 0}));  // float32, the sensor frame
  generate_dataset(tmp.path("utm"), scenes("pcd", kUtm));        // float64 x y z, in UTM
  const Samples near = samples_of(tmp.path("near/train"), "pcd", "\"auto\"", tmp.path("near.safetensors"));
  const Samples utm = samples_of(tmp.path("utm/train"), "pcd", "\"auto\"", tmp.path("utm.safetensors"));
  expect_same_samples(near, utm, "PCD F 8 in UTM vs PCD F 4 near the origin");

  // The failure this prevents: the UTM coordinates as float32 (0.5 m steps at 5.4e6 m) make other
  // crops and other samples.
  const Samples coarse = samples_of(tmp.path("utm/train"), "pcd", "[0, 0, 0]", tmp.path("coarse.safetensors"));
  const bool differs = coarse.n != near.n || skip_lines(coarse) != skip_lines(near) ||
                       max_diff(coarse.context, near.context, 4, 3) > 1e-3f;
  EXPECT_TRUE(differs) << "the stored frame should lose the precision the origin keeps";
}

TEST(UtmEquivalence, LasInUtmGivesTheSamplesOfTheLasNearTheOriginAndAnExplicitOriginToo) {
  test::TempDir tmp;
  // LAS holds millimetre integers, so its twin is a LAS near the origin (the same integers).
  generate_dataset(tmp.path("near"), scenes("las", {0, 0, 0}));
  generate_dataset(tmp.path("utm"), scenes("las", kUtm));
  const Samples near = samples_of(tmp.path("near/train"), "las", "\"auto\"", tmp.path("near.safetensors"));
  const Samples utm = samples_of(tmp.path("utm/train"), "las", "\"auto\"", tmp.path("utm.safetensors"));
  expect_same_samples(near, utm, "LAS in UTM vs LAS near the origin");
  // A fixed origin (a tiled map's) moved by the same shift: the same local frame again.
  const Samples fixed_near = samples_of(tmp.path("near/train"), "las", "[-300, 200, -100]", tmp.path("fn.safetensors"));
  const Samples fixed_utm =
      samples_of(tmp.path("utm/train"), "las", "[499700, 5400200, -100]", tmp.path("fu.safetensors"));
  expect_same_samples(fixed_near, fixed_utm, "LAS with fixed origins moved by the shift");
}

}  // namespace
}  // namespace sl
