#include "stages/io/formats.h"

#include <filesystem>

#include "graph/error.h"
#include "stages/io/kitti.h"
#include "stages/io/mapped_file.h"
#include "stages/io/pcd.h"
#include "stages/io/ply.h"

namespace sl {
namespace {

int64_t records(const std::string& path, size_t bytes) {
  const uintmax_t size = std::filesystem::file_size(path);
  if (size % bytes != 0)
    fail(path, "size " + std::to_string(size) + " bytes is not a multiple of " + std::to_string(bytes));
  return int64_t(size / bytes);
}

PointCloud decode_pcd(const std::string& path, bool drop_nan, int64_t* dropped) {
  PcdReadOptions opt;
  opt.drop_nan = drop_nan;
  return read_pcd(path, opt, dropped);
}
int64_t count_pcd(const std::string& path) {
  MappedFile f(path);
  return parse_pcd_header(f.data(), f.size(), path).points;
}
void write_pcd_binary(const std::string& path, const PointCloud& c) { write_pcd(path, c, PcdDataMode::Binary); }

int64_t count_ply(const std::string& path) {
  MappedFile f(path);
  return parse_ply_header(f.data(), f.size(), path).vertices;
}
void write_ply_binary(const std::string& path, const PointCloud& c) { write_ply(path, c, true); }

}  // namespace

const std::vector<CloudFormat>& cloud_formats() {
  static const std::vector<CloudFormat> rows = {
      {"pcd", ".pcd", "PCL's PCD v0.5/v0.7: ascii, binary, binary_compressed; fields x y z intensity", decode_pcd,
       count_pcd, write_pcd_binary},
      {"bin", ".bin", "KITTI velodyne: N x 4 float32 (x y z intensity), no header", read_kitti_bin,
       [](const std::string& p) { return records(p, 16); }, write_kitti_bin},
      {"nuscenes", ".pcd.bin", "nuScenes LiDAR sweep: N x 5 float32 (x y z intensity ring), no header",
       read_nuscenes_bin, [](const std::string& p) { return records(p, 20); }, write_nuscenes_bin},
      {"ply", ".ply", "PLY ascii or binary_little_endian: vertex x y z and intensity (or scalar_intensity, scalar)",
       read_ply, count_ply, write_ply_binary},
  };
  return rows;
}

std::vector<std::string> cloud_format_names() {
  std::vector<std::string> out;
  for (const auto& f : cloud_formats()) out.push_back(f.name);
  return out;
}

std::string cloud_extensions_text() {
  std::string out;
  for (const auto& f : cloud_formats()) out += (out.empty() ? "" : ", ") + f.extension;
  return out;
}

const CloudFormat& cloud_format(const std::string& name, const std::string& where) {
  for (const auto& f : cloud_formats())
    if (f.name == name) return f;
  std::string names;
  for (const auto& f : cloud_formats()) names += (names.empty() ? "" : ", ") + f.name;
  fail(where, "unknown cloud format '" + name + "' (known: " + names + ")");
}

const CloudFormat* format_of_path(const std::string& path) {
  const CloudFormat* best = nullptr;
  for (const auto& f : cloud_formats())
    if (path.size() > f.extension.size() && path.compare(path.size() - f.extension.size(), f.extension.size(), f.extension) == 0 &&
        (!best || f.extension.size() > best->extension.size()))
      best = &f;
  return best;
}

std::string cloud_stem(const std::string& path, const CloudFormat& f) {
  const std::string name = std::filesystem::path(path).filename().string();
  return name.size() > f.extension.size() ? name.substr(0, name.size() - f.extension.size()) : name;
}

PointCloud read_cloud_file(const std::string& path, bool drop_nan, int64_t* dropped) {
  const CloudFormat* f = format_of_path(path);
  if (!f) fail(path, "unknown cloud file type (expected one of " + cloud_extensions_text() + ")");
  return f->decode(path, drop_nan, dropped);
}

}  // namespace sl
