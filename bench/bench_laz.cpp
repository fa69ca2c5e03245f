// LAZ read throughput: our LAS reader on a LAZ file (read_las: the chunks decoded on all
// threads into the float32 columns) against the same reader on the uncompressed LAS twin (the
// same points), on 1 thread and on all, for a LAS 1.2 point format 3 file (point-wise items) and
// a LAS 1.4 point format 7 file (layered items), in chunks of 50,000 points (LASzip's default).
// The files are synthetic airborne-like points (tests/formats/clouds/synth_las.h) written by the
// test LAZ writer, in the page cache. Prints a markdown table: median of runs, M points/s.
//
//   bench_laz [POINTS=2000000] [RUNS=5] [DIR=/tmp]
//   bench_laz FILE.laz [RUNS]      (an existing LAZ file instead: LAZ only)
#include <tbb/global_control.h>
#include <tbb/info.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "formats/clouds/las.h"
#include "graph/atomic_file.h"
#include "tests/formats/clouds/laz_writer.h"
#include "tests/formats/clouds/synth_las.h"

namespace {

template <class F>
double median_seconds(int runs, F&& f) {
  std::vector<double> t;
  f();  // warm-up (page cache, allocator)
  for (int r = 0; r < runs; ++r) {
    const auto a = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

volatile float g_sink;

double read_seconds(const std::string& path, int threads, int runs) {
  tbb::global_control c(tbb::global_control::max_allowed_parallelism, size_t(threads));
  return median_seconds(runs, [&] {
    const sl::PointCloud p = sl::read_las(path);
    g_sink = p.columns[0].empty() ? 0.f : p.columns[0].back();
  });
}

}  // namespace

int main(int argc, char** argv) {
  const int all = tbb::info::default_concurrency();
  if (argc > 1 && std::string(argv[1]).size() > 4 && std::string(argv[1]).substr(std::string(argv[1]).size() - 4) == ".laz") {
    const std::string path = argv[1];
    const int runs = argc > 2 ? std::atoi(argv[2]) : 5;
    const uint64_t n = sl::read_las(path).size();
    std::printf("| file | points | 1 thread M pts/s | %d threads M pts/s | speed-up |\n|---|---:|---:|---:|---:|\n", all);
    const double s1 = read_seconds(path, 1, runs), sn = read_seconds(path, all, runs);
    std::printf("| %s | %llu | %.2f | %.2f | %.2f |\n", path.c_str(), (unsigned long long)n, n / s1 / 1e6, n / sn / 1e6, s1 / sn);
    return 0;
  }
  const uint64_t points = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 2000000;
  const int runs = argc > 2 ? std::atoi(argv[2]) : 5;
  const std::string dir = argc > 3 ? argv[3] : "/tmp";
  std::printf("LAZ vs LAS read (read_las: x y z intensity columns, auto origin), %llu points, median of %d runs, "
              "files in the page cache; threads: 1 and %d\n\n",
              (unsigned long long)points, runs, all);
  std::printf("| file | MB | 1 thread ms | %d threads ms | 1 thread M pts/s | %d threads M pts/s | speed-up | LAZ / LAS time (1 thread) |\n",
              all, all);
  std::printf("|---|---:|---:|---:|---:|---:|---:|---:|\n");
  for (int format : {3, 7}) {
    sl::test::SynthLasOptions o;
    o.version_minor = format >= 6 ? 4 : 2;
    o.format = format;
    o.points = points;
    o.seed = 5;
    const std::string las = sl::test::synth_las(o);
    const std::string las_path = dir + "/bench_laz_f" + std::to_string(format) + ".las";
    const std::string laz_path = dir + "/bench_laz_f" + std::to_string(format) + ".laz";
    sl::write_file_atomic(las_path, las);
    sl::write_file_atomic(laz_path, sl::test::laz_from_las(las, {}));
    double las1 = 0;
    for (const std::string& path : {las_path, laz_path}) {
      const double s1 = read_seconds(path, 1, runs), sn = read_seconds(path, all, runs);
      if (path == las_path) las1 = s1;
      const double mb = double(sl::read_file(path).size()) / 1e6;
      const std::string ratio = path == laz_path ? std::to_string(s1 / las1).substr(0, 5) : "";
      std::printf("| %s (format %d) | %.1f | %.1f | %.1f | %.2f | %.2f | %.2f | %s |\n", path.substr(dir.size() + 1).c_str(),
                  format, mb, s1 * 1e3, sn * 1e3, points / s1 / 1e6, points / sn / 1e6, s1 / sn, ratio.c_str());
    }
  }
  return 0;
}
