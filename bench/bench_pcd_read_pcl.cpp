// PCD read throughput: our read_pcd (as the reader stages call it: auto origin) vs
// pcl::io::loadPCDFile<pcl::PointXYZI> vs memcpy of the same bytes, for each DATA mode, on a
// ~120k-point XYZI cloud in the page cache.
// Prints a markdown table (MB/s of file bytes, median of runs).
#include <pcl/io/pcd_io.h>
#include <pcl/point_types.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "graph/atomic_file.h"
#include "formats/clouds/pcd.h"

namespace {

// A LiDAR-like sweep: 64 rings x ~1900 azimuth steps, ranges 2-80 m, intensity 0-1 with
// rounding so that compressed data is realistic (not random bytes).
sl::PointCloud lidar_cloud(size_t n) {
  std::mt19937 rng(123);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  sl::PointCloud c;
  c.fields = {"x", "y", "z", "intensity"};
  c.columns.assign(4, std::vector<float>(n));
  for (size_t i = 0; i < n; ++i) {
    float az = float(i % 1875) / 1875.f * 6.2831853f;
    float el = (float(i / 1875 % 64) / 63.f - 0.7f) * 0.45f;
    float r = 2.f + 78.f * u(rng) * u(rng);
    c.columns[0][i] = r * std::cos(el) * std::cos(az);
    c.columns[1][i] = r * std::cos(el) * std::sin(az);
    c.columns[2][i] = r * std::sin(el) + 1.8f;
    c.columns[3][i] = std::round(u(rng) * 255.f) / 255.f;
  }
  return c;
}

template <class F>
double median_seconds(int runs, F&& f) {
  std::vector<double> t;
  f();  // warm-up (page cache, allocator)
  for (int r = 0; r < runs; ++r) {
    auto a = std::chrono::steady_clock::now();
    f();
    auto b = std::chrono::steady_clock::now();
    t.push_back(std::chrono::duration<double>(b - a).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

volatile float g_sink;

}  // namespace

int main(int argc, char** argv) {
  const size_t n = 120000;
  const int runs = argc > 1 ? std::max(7, std::atoi(argv[1])) : 15;
  sl::PointCloud cloud = lidar_cloud(n);
  std::printf("PCD read, %zu points XYZI (float32), median of %d runs, files in page cache\n\n", n, runs);
  std::printf("| DATA mode | file MB | ours MB/s | PCL MB/s | memcpy MB/s | ours/PCL | ours ms | PCL ms |\n");
  std::printf("|---|---:|---:|---:|---:|---:|---:|---:|\n");
  for (auto mode : {sl::PcdDataMode::Ascii, sl::PcdDataMode::Binary, sl::PcdDataMode::BinaryCompressed}) {
    std::string path = std::string("/tmp/sl_bench_pcd_") + sl::pcd_data_mode_name(mode) + ".pcd";
    sl::write_pcd(path, cloud, mode);
    std::string bytes = sl::read_file(path);
    const double mb = double(bytes.size()) / 1e6;

    // As the reader stages decode: into the local frame of the auto origin (formats/clouds/origin.h).
    sl::PcdReadOptions as_pipeline;
    as_pipeline.origin = sl::OriginPolicy::auto_rule();
    double t_ours = median_seconds(runs, [&] {
      sl::PointCloud c = sl::read_pcd(path, as_pipeline);
      g_sink = c.columns[0][n / 2];
    });
    double t_pcl = median_seconds(runs, [&] {
      pcl::PointCloud<pcl::PointXYZI> c;
      if (pcl::io::loadPCDFile(path, c) != 0) std::abort();
      g_sink = c[n / 2].x;
    });
    std::vector<char> dst(bytes.size());
    double t_copy = median_seconds(runs * 4, [&] {
      std::memcpy(dst.data(), bytes.data(), bytes.size());
      g_sink = float(dst[bytes.size() / 2]);
    });
    // Sanity: both readers agree on the data (the stored values: origin {0, 0, 0}).
    sl::PointCloud a = sl::read_pcd(path, {});
    pcl::PointCloud<pcl::PointXYZI> b;
    pcl::io::loadPCDFile(path, b);
    for (size_t i = 0; i < n; i += 997)
      if (a.columns[0][i] != b[i].x || a.columns[3][i] != b[i].intensity) {
        std::fprintf(stderr, "mismatch at %zu in %s\n", i, path.c_str());
        return 1;
      }
    std::printf("| %s | %.2f | %.0f | %.0f | %.0f | %.2f | %.2f | %.2f |\n", sl::pcd_data_mode_name(mode), mb,
                mb / t_ours, mb / t_pcl, mb / t_copy, t_pcl / t_ours, t_ours * 1e3, t_pcl * 1e3);
    std::remove(path.c_str());
  }
  return 0;
}
