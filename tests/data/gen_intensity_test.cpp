// gen-data's intensity response (GenConfig::intensity_scale / intensity_gamma): the same points and
// lines as the default, each intensity v written as scale * v^gamma; refused with a map and out of range.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "data/gen.h"
#include "graph/error.h"
#include "formats/clouds/formats.h"
#include "tests/formats/clouds/io_test_util.h"
#include "tests/train/tiny_dataset.h"

namespace sl {
namespace {

TEST(GenIntensity, ScaleAndGammaMapEachWrittenIntensityAndNothingElse) {
  test::TempDir tmp;
  GenConfig g = test::tiny_dataset(5, 0, 1);
  generate_dataset(tmp.path("ref"), g);
  const PointCloud ref = read_cloud_file(tmp.path("ref/val/scene_0000.pcd"));
  for (const auto& [scale, gamma] : {std::pair<float, float>{0.4f, 1.f}, {0.6f, 2.f}}) {
    g.intensity_scale = scale, g.intensity_gamma = gamma;
    const std::string root = tmp.path("s" + std::to_string(scale));
    generate_dataset(root, g);
    const PointCloud c = read_cloud_file(root + "/val/scene_0000.pcd");
    ASSERT_EQ(c.fields, ref.fields);
    ASSERT_EQ(c.size(), ref.size());
    const int in = ref.field_index("intensity");
    for (size_t f = 0; f < ref.columns.size(); ++f)
      for (size_t i = 0; i < ref.size(); ++i) {
        const float v = ref.columns[f][i];
        ASSERT_EQ(c.columns[f][i], (int)f == in ? scale * (float)std::pow((double)v, (double)gamma) : v)
            << ref.fields[f] << " point " << i << " scale " << scale << " gamma " << gamma;
      }
    double mean_ref = 0, mean = 0;
    for (size_t i = 0; i < ref.size(); ++i) mean_ref += ref.columns[(size_t)in][i], mean += c.columns[(size_t)in][i];
    EXPECT_LT(mean, mean_ref) << "the intensities did change";
  }
}

TEST(GenIntensity, IsRefusedWithAMapAndOutOfRange) {
  test::TempDir tmp;
  GenConfig g = test::tiny_dataset(5, 0, 1);
  g.intensity_scale = 0.4f;
  g.map = "geojson";
  EXPECT_THROW(generate_dataset(tmp.path("m"), g), Error);
  g.map.clear();
  g.intensity_scale = 1.5f;
  EXPECT_THROW(generate_dataset(tmp.path("s"), g), Error);
  g.intensity_scale = 0.5f, g.intensity_gamma = 0.f;
  EXPECT_THROW(generate_dataset(tmp.path("g"), g), Error);
}

}  // namespace
}  // namespace sl
