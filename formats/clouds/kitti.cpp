#include "formats/clouds/kitti.h"

#include <cmath>
#include <cstring>

#include "graph/atomic_file.h"
#include "graph/error.h"
#include "formats/clouds/formats.h"
#include "formats/clouds/mapped_file.h"

namespace sl {

namespace {

// N records of `floats` little-endian float32 whose first four are x, y, z, intensity.
PointCloud read_float_records(const std::string& path, size_t floats, const char* layout, const DecodeOptions& opt,
                              DecodeInfo* info) {
  const bool drop_nan = opt.drop_nan;
  MappedFile f(path);
  const size_t rec = floats * sizeof(float);
  if (f.size() == 0) fail(path, "empty file, expected N x " + std::to_string(rec) + " bytes (" + layout + " as float32)");
  if (f.size() % rec != 0)
    fail(path, "size " + std::to_string(f.size()) + " bytes is not a multiple of " + std::to_string(rec) + " (" +
                   layout + " as float32); truncated, or another format?");
  const size_t n = f.size() / rec;
  PointCloud cloud;
  cloud.fields = {"x", "y", "z", "intensity"};
  cloud.columns.assign(4, std::vector<float>(n));
  float* col[4] = {cloud.columns[0].data(), cloud.columns[1].data(), cloud.columns[2].data(), cloud.columns[3].data()};
  size_t w = 0;
  for (size_t i = 0; i < n; ++i) {
    float p[4];
    std::memcpy(p, f.data() + i * rec, sizeof p);
    if (drop_nan && !(std::isfinite(p[0]) && std::isfinite(p[1]) && std::isfinite(p[2]))) continue;
    for (int c = 0; c < 4; ++c) col[c][w] = p[c];
    ++w;
  }
  for (auto& c : cloud.columns) c.resize(w);
  const int64_t moved_out = localize_float32(cloud, opt.origin, info, drop_nan);
  if (info) info->dropped = int64_t(n - w) + moved_out;
  return cloud;
}

// Writes x, y, z, intensity (0 without it), then `extra` zero-or-field columns, as float32 records.
void write_float_records(const std::string& path, const PointCloud& cloud, const std::vector<std::string>& names,
                         const char* what) {
  if (cloud.origin != std::array<double, 3>{0, 0, 0})
    fail(path, std::string("a ") + what + " holds float32 coordinates in the sensor's frame; this cloud has an origin "
               "(world coordinates, e.g. UTM): write it as pcd, ply or las");
  std::vector<const std::vector<float>*> col(names.size(), nullptr);
  for (size_t f = 0; f < cloud.fields.size(); ++f)
    for (size_t c = 0; c < names.size(); ++c)
      if (cloud.fields[f] == names[c]) col[c] = &cloud.columns[f];
  for (int c = 0; c < 3; ++c)
    if (!col[size_t(c)]) fail(path, std::string("cannot write a ") + what + ": the cloud has no field '" + names[size_t(c)] + "'");
  const size_t n = col[0]->size(), k = names.size();
  std::string bytes(n * k * sizeof(float), '\0');
  std::vector<float> p(k);
  for (size_t i = 0; i < n; ++i) {
    for (size_t c = 0; c < k; ++c) p[c] = col[c] ? (*col[c])[i] : 0.f;
    std::memcpy(bytes.data() + i * k * sizeof(float), p.data(), k * sizeof(float));
  }
  write_file_atomic(path, bytes);
}

}  // namespace

PointCloud read_kitti_bin(const std::string& path, const DecodeOptions& opt, DecodeInfo* info) {
  return read_float_records(path, 4, "x y z intensity", opt, info);
}

PointCloud read_nuscenes_bin(const std::string& path, const DecodeOptions& opt, DecodeInfo* info) {
  return read_float_records(path, 5, "x y z intensity ring", opt, info);
}

PointCloud read_kitti_bin(const std::string& path, bool drop_nan, int64_t* dropped) {
  DecodeInfo info;
  PointCloud c = read_kitti_bin(path, DecodeOptions{drop_nan, OriginPolicy::stored()}, &info);
  if (dropped) *dropped = info.dropped;
  return c;
}

PointCloud read_nuscenes_bin(const std::string& path, bool drop_nan, int64_t* dropped) {
  DecodeInfo info;
  PointCloud c = read_nuscenes_bin(path, DecodeOptions{drop_nan, OriginPolicy::stored()}, &info);
  if (dropped) *dropped = info.dropped;
  return c;
}

void write_kitti_bin(const std::string& path, const PointCloud& cloud) {
  write_float_records(path, cloud, {"x", "y", "z", "intensity"}, "KITTI .bin");
}

void write_nuscenes_bin(const std::string& path, const PointCloud& cloud) {
  write_float_records(path, cloud, {"x", "y", "z", "intensity", "ring"}, "nuScenes .pcd.bin");
}

// Their rows of the cloud-format table (formats/clouds/formats.h).
namespace {
int64_t records(const std::string& path, size_t bytes) {
  MappedFile f(path);
  if (f.size() % bytes != 0)
    fail(path, "size " + std::to_string(f.size()) + " bytes is not a multiple of " + std::to_string(bytes));
  return int64_t(f.size() / bytes);
}
CloudFormat kitti_format() {
  return {"bin", ".bin", "KITTI velodyne: N x 4 float32 (x y z intensity), no header",
          [](const std::string& p, const DecodeOptions& o, DecodeInfo* i) { return read_kitti_bin(p, o, i); },
          [](const std::string& p) { return records(p, 16); }, write_kitti_bin};
}
CloudFormat nuscenes_format() {
  return {"nuscenes", ".pcd.bin", "nuScenes LiDAR sweep: N x 5 float32 (x y z intensity ring), no header",
          [](const std::string& p, const DecodeOptions& o, DecodeInfo* i) { return read_nuscenes_bin(p, o, i); },
          [](const std::string& p) { return records(p, 20); }, write_nuscenes_bin};
}
SL_REGISTER_CLOUD_FORMAT(kitti_format);
SL_REGISTER_CLOUD_FORMAT(nuscenes_format);
}  // namespace

}  // namespace sl
