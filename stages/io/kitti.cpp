#include "stages/io/kitti.h"

#include <cmath>
#include <cstring>

#include "graph/atomic_file.h"
#include "graph/error.h"
#include "stages/io/mapped_file.h"

namespace sl {

PointCloud read_kitti_bin(const std::string& path, bool drop_nan, int64_t* dropped) {
  MappedFile f(path);
  if (f.size() == 0) fail(path, "empty file, expected N x 16 bytes (x y z intensity as float32)");
  if (f.size() % 16 != 0)
    fail(path, "size " + std::to_string(f.size()) + " bytes is not a multiple of 16 (x y z intensity as float32); "
               "truncated, or not a KITTI .bin?");
  const size_t n = f.size() / 16;
  PointCloud cloud;
  cloud.fields = {"x", "y", "z", "intensity"};
  cloud.columns.assign(4, std::vector<float>(n));
  float* col[4] = {cloud.columns[0].data(), cloud.columns[1].data(), cloud.columns[2].data(), cloud.columns[3].data()};
  size_t w = 0;
  for (size_t i = 0; i < n; ++i) {
    float p[4];
    std::memcpy(p, f.data() + i * 16, 16);
    if (drop_nan && !(std::isfinite(p[0]) && std::isfinite(p[1]) && std::isfinite(p[2]))) continue;
    for (int c = 0; c < 4; ++c) col[c][w] = p[c];
    ++w;
  }
  for (auto& c : cloud.columns) c.resize(w);
  if (dropped) *dropped = int64_t(n - w);
  return cloud;
}

void write_kitti_bin(const std::string& path, const PointCloud& cloud) {
  const std::vector<float>* col[4] = {nullptr, nullptr, nullptr, nullptr};
  const char* names[4] = {"x", "y", "z", "intensity"};
  for (size_t f = 0; f < cloud.fields.size(); ++f)
    for (int c = 0; c < 4; ++c)
      if (cloud.fields[f] == names[c]) col[c] = &cloud.columns[f];
  for (int c = 0; c < 3; ++c)
    if (!col[c]) fail(path, std::string("cannot write a KITTI .bin: the cloud has no field '") + names[c] + "'");
  const size_t n = col[0]->size();
  std::string bytes(n * 16, '\0');
  for (size_t i = 0; i < n; ++i) {
    const float p[4] = {(*col[0])[i], (*col[1])[i], (*col[2])[i], col[3] ? (*col[3])[i] : 0.f};
    std::memcpy(bytes.data() + i * 16, p, 16);
  }
  write_file_atomic(path, bytes);
}

}  // namespace sl
