#include "data/render.h"

#include <png.h>

#include <algorithm>
#include <cmath>

#include "graph/atomic_file.h"
#include "graph/error.h"
#include "formats/maps/categories.h"

namespace sl {

std::string encode_png_rgb(const std::vector<uint8_t>& rgb, int w, int h) {
  if (w <= 0 || h <= 0 || rgb.size() != (size_t)w * h * 3) fail("encode_png_rgb", "bad image size");
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  if (!png) fail("encode_png_rgb", "png_create_write_struct failed");
  png_infop info = png_create_info_struct(png);
  std::string out;
  // libpng reports errors by longjmp; nothing with a destructor is created after this point
  // inside the protected region except `out`, which lives outside it.
  if (!info || setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, info ? &info : nullptr);
    fail("encode_png_rgb", "libpng error");
  }
  png_set_write_fn(
      png, &out,
      [](png_structp p, png_bytep data, png_size_t n) {
        static_cast<std::string*>(png_get_io_ptr(p))->append(reinterpret_cast<const char*>(data), n);
      },
      [](png_structp) {});
  png_set_IHDR(png, info, w, h, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  png_set_compression_level(png, 9);
  png_write_info(png, info);
  for (int y = 0; y < h; ++y) png_write_row(png, const_cast<png_bytep>(rgb.data() + (size_t)y * w * 3));
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  return out;
}

void render_topdown_png(const PointCloud& cloud, const std::vector<Polyline>& lines, const std::string& path,
                        int size_px, float meters) {
  if (size_px < 16 || size_px > 16384) fail(path, "image size must be in [16, 16384] pixels");
  const int ix = cloud.field_index("x"), iy = cloud.field_index("y"), ii = cloud.field_index("intensity");
  if (ix < 0 || iy < 0) fail(path, "point cloud has no x or y field");
  const auto& X = cloud.columns[ix];
  const auto& Y = cloud.columns[iy];
  double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
  for (size_t i = 0; i < X.size(); ++i)
    if (std::isfinite(X[i]) && std::isfinite(Y[i]))
      x0 = std::min(x0, (double)X[i]), x1 = std::max(x1, (double)X[i]), y0 = std::min(y0, (double)Y[i]),
      y1 = std::max(y1, (double)Y[i]);
  if (!(x0 <= x1)) x0 = x1 = y0 = y1 = 0;
  // A fixed-size view is centred on the world's (0, 0) (the sensor, in a LiDAR frame), which the
  // local columns have at -origin; a fitted one on the bounding box.
  const double cx = meters > 0 ? -cloud.origin[0] : 0.5 * (x0 + x1), cy = meters > 0 ? -cloud.origin[1] : 0.5 * (y0 + y1);
  const double side = meters > 0 ? meters : std::max({x1 - x0, y1 - y0, 1e-3}) * 1.02;
  const double scale = size_px / side;  // pixels per metre
  auto px = [&](double x) { return (x - cx) * scale + size_px * 0.5; };
  auto py = [&](double y) { return size_px * 0.5 - (y - cy) * scale; };

  std::vector<uint8_t> img((size_t)size_px * size_px * 3, 0);
  for (size_t i = 0; i < X.size(); ++i) {
    const double fx = px(X[i]), fy = py(Y[i]);
    if (!(fx >= 0 && fx < size_px && fy >= 0 && fy < size_px)) continue;
    const double v = ii >= 0 ? std::clamp((double)cloud.columns[ii][i], 0.0, 1.0) : 0.5;
    const uint8_t g = (uint8_t)std::lround(50 + 205 * std::sqrt(v));
    uint8_t* p = &img[((size_t)fy * size_px + (size_t)fx) * 3];
    if (g > p[0]) p[0] = p[1] = p[2] = g;
  }
  auto blend = [&](int x, int y, const uint8_t c[3], double a) {
    if (x < 0 || y < 0 || x >= size_px || y >= size_px) return;
    uint8_t* p = &img[((size_t)y * size_px + x) * 3];
    for (int k = 0; k < 3; ++k) p[k] = (uint8_t)std::lround((1 - a) * p[k] + a * c[k]);
  };
  for (const Polyline& l : lines) {
    static const uint8_t kOrange[3] = {255, 140, 0}, kCyan[3] = {0, 200, 255}, kGreen[3] = {40, 220, 60},
                         kRed[3] = {255, 40, 40}, kMagenta[3] = {255, 0, 255};
    const std::string name = canonical_category(l.category), type = name.substr(0, name.find(':'));
    const uint8_t* c = type == "line_thin" || type == "line_thick" ? kOrange
                       : type == "curbstone"                       ? kCyan
                       : type == "road_border"                     ? kGreen
                       : type == "stop_line"                       ? kRed
                                                                   : kMagenta;
    for (size_t k = 0; k + 1 < l.points.size(); ++k) {
      const double ax = px(l.points[k][0]), ay = py(l.points[k][1]);
      const double bx = px(l.points[k + 1][0]), by = py(l.points[k + 1][1]);
      const int steps = (int)std::ceil(std::hypot(bx - ax, by - ay) * 2) + 1;
      if (steps > 4 * size_px) continue;  // a segment far larger than the picture: skip it
      for (int s = 0; s <= steps; ++s) {
        const double t = (double)s / steps;
        blend((int)std::floor(ax + t * (bx - ax)), (int)std::floor(ay + t * (by - ay)), c, 0.55);
      }
    }
    for (const auto& q : l.points) {
      const int vx = (int)std::floor(px(q[0])), vy = (int)std::floor(py(q[1]));
      for (int dy = -1; dy <= 1; ++dy)
        for (int dx = -1; dx <= 1; ++dx) blend(vx + dx, vy + dy, c, dx == 0 && dy == 0 ? 1.0 : 0.5);
    }
  }
  write_file_atomic(path, encode_png_rgb(img, size_px, size_px));
}

}  // namespace sl
