// The grouping of the local branch (geometry/group.h) on a gen-data dataset, as the pipeline makes
// its samples (split_lines 10 m, perturb_line L = 32 with lateral_sigma 0.3, crop_polyline 2 m
// around the noisy line):
//   1. a sweep of radius R x K: the share of line points whose true position lies inside the
//      group's window (within R of the noisy point, and within the K-th point's distance when
//      the group is full: nearest-first K caps the window where points are dense), the share
//      with >= 5 grouped points within 0.25 m of the true position (evidence to localize on),
//      the mean count and the share of full groups;
//   2. time per sample: the brute-force reference vs the grid (checked equal on every sample),
//      beside the crop's own time.
// Prints markdown tables (medians); the numbers go in bench/results/group.md with the machine.
//   bench_group DATA_ROOT [--scenes N] [--reps N] [--k K] [--radius R] [--crop R] [--aspect A] [--no-sweep] [--no-shapes]
//   (DATA_ROOT: gen-data output; --aspect: the window's shape in part 2, the reference vs the grid;
//   --no-shapes: skip part 1b)
#include <algorithm>
#include <ctime>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "formats/clouds/formats.h"
#include "formats/maps/lines_json.h"
#include "geometry/crop.h"
#include "geometry/group.h"
#include "geometry/perturb.h"
#include "geometry/polyline.h"

namespace fs = std::filesystem;

namespace {

struct Piece {
  size_t scene;
  std::vector<uint32_t> crop;
  sl::Tensor noisy, target;  // [L, 3]
};

// This thread's CPU time, microseconds: on a shared machine (other builds running) wall time
// counts the time this thread waited for a core; CPU time does not.
double cpu_us() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_group DATA_ROOT [--scenes N] [--reps N] [--k K] [--radius R]\n");
    return 2;
  }
  const std::string root = argv[1];
  int max_scenes = 8, reps = 5, k_time = 32;
  float r_time = 0.8f, crop_radius = 2.0f, aspect_time = 1.f;
  bool sweep = true, shapes = true;
  for (int i = 2; i < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--no-sweep") {
      sweep = false, --i;
      continue;
    }
    if (a == "--no-shapes") {
      shapes = false, --i;
      continue;
    }
    if (i + 1 >= argc) break;
    if (a == "--scenes") max_scenes = std::atoi(argv[i + 1]);
    else if (a == "--reps") reps = std::max(1, std::atoi(argv[i + 1]));
    else if (a == "--k") k_time = std::atoi(argv[i + 1]);
    else if (a == "--radius") r_time = (float)std::atof(argv[i + 1]);
    else if (a == "--crop") crop_radius = (float)std::atof(argv[i + 1]);
    else if (a == "--aspect") aspect_time = (float)std::atof(argv[i + 1]);
  }
  std::vector<std::string> pcds;
  for (const auto& e : fs::directory_iterator(root + "/train"))
    if (e.path().extension() == ".pcd") pcds.push_back(e.path().string());
  std::sort(pcds.begin(), pcds.end());
  if (pcds.size() > (size_t)max_scenes) pcds.resize((size_t)max_scenes);

  const int L = 32;
  sl::PerturbParams prm;
  prm.lateral_sigma = 0.3f;  // as the shipped pipelines
  std::vector<sl::PointCloud> clouds;
  std::vector<Piece> pieces;
  std::vector<double> t_crop;
  size_t crop_points = 0;
  for (size_t s = 0; s < pcds.size(); ++s) {
    clouds.push_back(sl::read_cloud_file(pcds[s]));
    const sl::PointCloud& cloud = clouds.back();
    const std::string json = pcds[s].substr(0, pcds[s].size() - 4) + ".json";
    const sl::LinesFile lf = sl::read_lines_json(json, {"lane_marking", "curb"}, 100000, cloud.origin);  // one local frame
    auto index = sl::GridIndex::build(cloud, 1.0f);
    uint64_t seed = 1000 * s + 1;
    for (const auto& line : lf.lines)
      for (const auto& piece : sl::split_polyline(line.points, 10.0)) {
        Piece p;
        p.scene = s;
        const sl::Tensor truth = sl::resample_polyline(piece, L);
        sl::perturb_line(truth, prm, seed++, &p.noisy, &p.target);
        std::vector<double> tc;
        for (int r = 0; r < reps; ++r) {
          const double t0 = cpu_us();
          p.crop = sl::crop_polyline(cloud, *index, sl::polyline_of(p.noisy), crop_radius);
          tc.push_back(cpu_us() - t0);
        }
        t_crop.push_back(median(tc));
        if (p.crop.size() < 32) continue;  // crop_polyline's min_points
        crop_points += p.crop.size();
        pieces.push_back(std::move(p));
      }
  }
  std::printf("%zu scenes of %s, %zu samples (line pieces), %.0f crop points per sample\n\n", pcds.size(),
              root.c_str(), pieces.size(), (double)crop_points / (double)pieces.size());

  // 1. Window coverage over R x K.
  std::printf("| R m | K | truth in window | >= 5 pts within 0.25 m of truth | mean count | full groups | KiB/sample |\n");
  std::printf("|---:|---:|---:|---:|---:|---:|---:|\n");
  for (float R : {0.5f, 0.75f, 1.0f, 1.25f})
    if (sweep)
    for (int K : {16, 32, 64, 128, 256, 512}) {
      double in_window = 0, evidence = 0, count = 0, full = 0, n = 0;
      for (const Piece& p : pieces) {
        const sl::Groups g = sl::group_points(clouds[p.scene], p.crop, p.noisy, K, R);
        for (int l = 0; l < L; ++l) {
          const float tx = p.target.data[(size_t)l * 3], ty = p.target.data[(size_t)l * 3 + 1];
          const float c = g.count.data[(size_t)l];
          const float* rows = &g.local.data[(size_t)l * (size_t)K * 4];
          float reach = R;  // a full group reaches its K-th point only
          if (c == (float)K) reach = std::min(R, std::hypot(rows[(K - 1) * 4], rows[(K - 1) * 4 + 1]));
          in_window += std::hypot(tx, ty) <= reach;
          int near = 0;
          for (int j = 0; j < (int)c; ++j) near += std::hypot(rows[j * 4] - tx, rows[j * 4 + 1] - ty) <= 0.25f;
          evidence += near >= 5;
          count += c;
          full += c == (float)K;
          n += 1;
        }
      }
      std::printf("| %.2f | %d | %.1f%% | %.1f%% | %.1f | %.1f%% | %.0f |\n", R, K, 100 * in_window / n,
                  100 * evidence / n, count / n, 100 * full / n, L * K * 4 * 4 / 1024.0);
    }

  // 1b. The window's shape at K = k_time, R = r_time: what the grouped points show of the truth,
  // and the grid's thread CPU time per sample.
  std::printf("\nK %d, R %.2f m (crop %.1f m): selection and aspect\n\n", k_time, r_time, crop_radius);
  std::printf("| selection | aspect | >= 5 pts within 0.25 m of truth | a point within 0.05 m of truth | lateral reach m (median) | us/sample (grid) |\n");
  std::printf("|---|---:|---:|---:|---:|---:|\n");
  struct Shape {
    sl::GroupSelect sel;
    float aspect;
    const char* name;
  };
  for (const Shape& sh : {Shape{sl::GroupSelect::kNearest, 1.f, "nearest"}, Shape{sl::GroupSelect::kNearest, 4.f, "nearest"},
                          Shape{sl::GroupSelect::kNearest, 8.f, "nearest"}, Shape{sl::GroupSelect::kSpread, 1.f, "spread"}}) {
    if (!shapes) break;
    double evidence = 0, close = 0, n = 0, us = 0;
    std::vector<double> reach;
    for (const Piece& p : pieces) {
      std::vector<double> t;
      sl::Groups g;
      for (int r = 0; r < reps; ++r) {
        const double t0 = cpu_us();
        g = sl::group_points(clouds[p.scene], p.crop, p.noisy, k_time, r_time, sh.sel, sh.aspect);
        t.push_back(cpu_us() - t0);
      }
      us += median(t);
      for (int l = 0; l < L; ++l) {
        const float tx = p.target.data[(size_t)l * 3], ty = p.target.data[(size_t)l * 3 + 1];
        const int c = (int)g.count.data[(size_t)l];
        const float* rows = &g.local.data[(size_t)l * (size_t)k_time * 4];
        int near = 0;
        bool hit = false;
        double far = 0;
        // lateral: across the true offset's direction is unknown here; the reach is the largest
        // distance of a grouped point in the direction of the truth (its projection on it).
        const double tn = std::hypot(tx, ty);
        for (int j = 0; j < c; ++j) {
          const double d = std::hypot(rows[j * 4] - tx, rows[j * 4 + 1] - ty);
          near += d <= 0.25;
          hit = hit || d <= 0.05;
          if (tn > 0) far = std::max(far, (rows[j * 4] * tx + rows[j * 4 + 1] * ty) / tn);
        }
        evidence += near >= 5, close += hit, n += 1;
        reach.push_back(far);
      }
    }
    std::printf("| %s | %.0f | %.1f%% | %.1f%% | %.2f | %.1f |\n", sh.name, sh.aspect, 100 * evidence / n, 100 * close / n,
                median(reach), us / (double)pieces.size());
  }

  // 2. Brute force vs grid, per sample, checked equal.
  std::vector<double> t_ref, t_fast;
  for (const Piece& p : pieces) {
    std::vector<double> a, b;
    sl::Groups want, got;
    for (int r = 0; r < reps; ++r) {
      const double t0 = cpu_us();
      want = sl::group_points_reference(clouds[p.scene], p.crop, p.noisy, k_time, r_time, sl::GroupSelect::kNearest,
                                        aspect_time);
      const double t1 = cpu_us();
      got = sl::group_points(clouds[p.scene], p.crop, p.noisy, k_time, r_time, sl::GroupSelect::kNearest, aspect_time);
      const double t2 = cpu_us();
      a.push_back(t1 - t0);
      b.push_back(t2 - t1);
    }
    if (std::memcmp(want.local.data.data(), got.local.data.data(), want.local.data.size() * 4) != 0 ||
        want.count.data != got.count.data) {
      std::fprintf(stderr, "the grid's groups differ from the reference's\n");
      return 1;
    }
    t_ref.push_back(median(a));
    t_fast.push_back(median(b));
  }
  double sum_ref = 0, sum_fast = 0;
  for (size_t i = 0; i < t_ref.size(); ++i) sum_ref += t_ref[i], sum_fast += t_fast[i];
  std::printf("\nK %d, R %.2f m, aspect %g, thread CPU time per sample (median of %d reps each; mean and median over samples):\n\n",
              k_time, r_time, aspect_time, reps);
  std::printf("| method | mean us | median us | samples/s (1 thread) |\n|---|---:|---:|---:|\n");
  std::printf("| group_points_reference (brute force) | %.1f | %.1f | %.0f |\n", sum_ref / t_ref.size(), median(t_ref),
              1e6 * t_ref.size() / sum_ref);
  std::printf("| group_points (grid) | %.1f | %.1f | %.0f |\n", sum_fast / t_fast.size(), median(t_fast),
              1e6 * t_fast.size() / sum_fast);
  std::printf("| (crop_polyline, for scale) | %.1f | %.1f | |\n", [&] {
    double s = 0;
    for (double t : t_crop) s += t;
    return s / t_crop.size();
  }(), median(t_crop));
  std::printf("\ngrid vs brute force: %.1fx; equal on all %zu samples\n", sum_ref / sum_fast, t_ref.size());
  return 0;
}
