// For the tests that open a page in a real browser: Debian's headless Chromium (scripts/setup
// installs it as optional) and the PNG screenshot it takes.
#pragma once
#include <png.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

namespace sl::test {

// The Chromium on PATH ("" when none: the test skips, saying so).
inline std::string find_chromium() {
  for (const char* c : {"chromium", "chromium-browser", "google-chrome"}) {
    const std::string cmd = std::string("command -v ") + c + " >/dev/null 2>&1";
    if (std::system(cmd.c_str()) == 0) return c;
  }
  return "";
}

// An RGB image read with libpng's simplified API; empty pixels and `error` set when it cannot be read.
struct RgbImage {
  int width = 0, height = 0;
  std::vector<uint8_t> px;  // r, g, b per pixel, row by row
  std::string error;
};

inline RgbImage read_png_rgb(const std::string& path) {
  RgbImage out;
  png_image img{};
  img.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_file(&img, path.c_str())) {
    out.error = img.message;
    return out;
  }
  img.format = PNG_FORMAT_RGB;
  out.px.resize(PNG_IMAGE_SIZE(img));
  if (!png_image_finish_read(&img, nullptr, out.px.data(), 0, nullptr)) {
    out.error = img.message;
    out.px.clear();
    return out;
  }
  out.width = int(img.width), out.height = int(img.height);
  return out;
}

}  // namespace sl::test
