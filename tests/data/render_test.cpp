#include <gtest/gtest.h>
#include <png.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <unistd.h>

#include "data/render.h"
#include "graph/atomic_file.h"
#include "graph/error.h"

namespace {
// Decodes an RGB PNG file with libpng (the reader side, independent of our encoder's code).
std::vector<uint8_t> decode_rgb(const std::string& path, int* w, int* h) {
  FILE* f = std::fopen(path.c_str(), "rb");
  EXPECT_NE(f, nullptr);
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png_create_info_struct(png);
  png_init_io(png, f);
  png_read_info(png, info);
  *w = (int)png_get_image_width(png, info), *h = (int)png_get_image_height(png, info);
  EXPECT_EQ(png_get_color_type(png, info), PNG_COLOR_TYPE_RGB);
  std::vector<uint8_t> img((size_t)*w * *h * 3);
  for (int y = 0; y < *h; ++y) png_read_row(png, img.data() + (size_t)y * *w * 3, nullptr);
  png_destroy_read_struct(&png, &info, nullptr);
  std::fclose(f);
  return img;
}
}  // namespace

TEST(Render, PointsAreGrayByIntensityAndLinesColouredByCategory) {
  sl::PointCloud c;
  c.fields = {"x", "y", "z", "intensity"};
  // Corners fix the fitted view to [-10, 10]^2; one bright and one dark point inside.
  c.columns = {{-10, 10, -10, 10, -5, 5}, {-10, -10, 10, 10, 5, 5}, {0, 0, 0, 0, 0, 0}, {0, 0, 0, 0, 1.0f, 0.0f}};
  sl::Polyline curb;
  curb.category = "curb";
  curb.points = {{-8, -5, 0}, {8, -5, 0}};
  const std::string path = (std::filesystem::temp_directory_path() / ("sl_render_" + std::to_string(getpid()) + ".png")).string();
  sl::render_topdown_png(c, {curb}, path, 200);
  int w, h;
  const auto img = decode_rgb(path, &w, &h);
  ASSERT_EQ(w, 200);
  ASSERT_EQ(h, 200);
  const double scale = 200 / (20 * 1.02);
  auto at = [&](double x, double y) {
    const int px = (int)std::floor(x * scale + 100), py = (int)std::floor(100 - y * scale);
    return &img[((size_t)py * w + px) * 3];
  };
  EXPECT_EQ(at(-5, 5)[0], 255);   // intensity 1 -> white
  EXPECT_EQ(at(5, 5)[0], 50);     // intensity 0 -> dark gray, still visible on black
  EXPECT_EQ(at(5, 5)[1], 50);
  EXPECT_EQ(at(0, 0)[0], 0);      // no point: black
  const uint8_t* line = at(0, -5);  // on the curb line: cyan-ish (no red, strong blue)
  EXPECT_LT(line[0], 30);
  EXPECT_GT(line[2], 120);
  std::filesystem::remove(path);
  EXPECT_THROW(sl::render_topdown_png(c, {}, path, 4), sl::Error);
}
