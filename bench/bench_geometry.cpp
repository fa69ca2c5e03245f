// Times the per-line geometry of a sample on a generated scene: crop (grid index vs brute
// force), resample + gather, resample_polyline + perturb. Prints a markdown table of medians
// over repetitions and writes it, with the machine, to bench/results/geometry.md.
//   bench_geometry [reps=15] [out=bench/results/geometry.md]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "data/gen.h"
#include "graph/atomic_file.h"
#include "geometry/center.h"
#include "geometry/crop.h"
#include "geometry/perturb.h"
#include "geometry/polyline.h"
#include "geometry/resample.h"

namespace {
template <typename Fn>
double median_us(int reps, Fn fn) {  // median wall time of one call of fn(), microseconds
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    const auto a = std::chrono::steady_clock::now();
    fn();
    t.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - a).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}
double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
std::string shell(const char* cmd) {
  std::string out;
  if (FILE* p = popen(cmd, "r")) {
    char buf[256];
    while (fgets(buf, sizeof buf, p)) out += buf;
    pclose(p);
  }
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}
}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::max(1, std::atoi(argv[1])) : 15;
  const std::string out_path = argc > 2 ? argv[2] : "bench/results/geometry.md";
  sl::GenConfig cfg;
  cfg.kind = "sweep";  // the recorded results are on a sweep
  const float radius = 2.0f;
  const int P = 1024, L = 32;
  const auto sc = sl::generate_scene(cfg, sl::scene_seed(cfg, 0, 0));
  const size_t n_lines = sc.lines.size();

  // Grid cell sizes swept side by side: a smaller cell lets whole cells inside the corridor be
  // kept without a per-point test, at the price of more cells to visit.
  const std::vector<float> cells = {radius, radius / 2, radius / 3};
  std::vector<double> t_build(cells.size()), t_crops(cells.size());
  size_t crop_total = 0;
  std::vector<std::vector<uint32_t>> crops(n_lines);
  for (size_t c = 0; c < cells.size(); ++c) {
    std::shared_ptr<const sl::GridIndex> index;
    t_build[c] = median_us(reps, [&] { index = sl::GridIndex::build(sc.cloud, cells[c]); });
    t_crops[c] = median_us(reps, [&] {
      for (size_t i = 0; i < n_lines; ++i) crops[i] = sl::crop_polyline(sc.cloud, *index, sc.lines[i], radius);
    }) / n_lines;
    crop_total = 0;
    for (size_t i = 0; i < n_lines; ++i) {
      auto ids = crops[i];  // in cell order (crop.h)
      std::sort(ids.begin(), ids.end());
      if (ids != sl::crop_polyline_reference(sc.cloud, sc.lines[i], radius)) {
        std::fprintf(stderr, "indexed crop (cell %.2f) differs from the reference on line %zu\n", cells[c], i);
        return 1;
      }
      crop_total += crops[i].size();
    }
  }
  const size_t best = (size_t)(std::min_element(t_crops.begin(), t_crops.end()) - t_crops.begin());
  const double t_crop = t_crops[best];
  const double t_ref = median_us(std::max(3, reps / 3), [&] {
    for (size_t i = 0; i < n_lines; ++i) crops[i] = sl::crop_polyline_reference(sc.cloud, sc.lines[i], radius);
  }) / n_lines;
  const double t_resample = median_us(reps, [&] {
    for (size_t i = 0; i < n_lines; ++i) {
      const auto pick = sl::resample_indices(crops[i].size(), P, 42 + i);
      auto ctx = sl::gather_points(sc.cloud, crops[i], pick);
      if (ctx.data.empty()) std::abort();
    }
  }) / n_lines;
  const double t_center_perturb = median_us(reps, [&] {
    for (size_t i = 0; i < n_lines; ++i) {
      sl::Tensor tl = sl::resample_polyline(sc.lines[i], L), noisy, off;
      sl::Tensor ctx({P, 4});
      sl::center_sample(sc.lines[i], true, &ctx, {&tl});
      sl::perturb_line(tl, {}, 7 + i, &noisy, &off);
    }
  }) / n_lines;

  // The shipped pipeline's samples: 10 m pieces (split_lines), perturbed to 32 points
  // (perturb_line), cropped around the noisy piece with the default cell (radius / 2). Each
  // crop kernel this CPU runs, side by side, interleaved per repetition.
  std::vector<sl::Polyline> pieces;
  for (const auto& l : sc.lines)
    for (const auto& pc : sl::split_polyline(l.points, 10.0)) {
      sl::Polyline piece;
      piece.points = pc;
      sl::Tensor noisy, off;
      sl::perturb_line(sl::resample_polyline(piece, L), {}, 7 + pieces.size(), &noisy, &off);
      pieces.push_back(sl::polyline_of(noisy));
    }
  const auto piece_index = sl::GridIndex::build(sc.cloud, radius / 2);
  const std::vector<std::string> kernels = sl::crop_kernels();
  std::vector<std::vector<double>> t_piece(kernels.size());
  size_t piece_points = 0;
  for (int r = 0; r < reps; ++r)
    for (size_t k = 0; k < kernels.size(); ++k) {
      sl::use_crop_kernel(kernels[k]);
      size_t got = 0;
      t_piece[k].push_back(median_us(1, [&] {
        for (const auto& pc : pieces) got += sl::crop_polyline(sc.cloud, *piece_index, pc, radius).size();
      }) / pieces.size());
      piece_points = got / pieces.size();
    }
  sl::use_crop_kernel("");
  for (const auto& pc : pieces) {
    auto fast = sl::crop_polyline(sc.cloud, *piece_index, pc, radius);  // in cell order (crop.h)
    std::sort(fast.begin(), fast.end());
    if (fast != sl::crop_polyline_reference(sc.cloud, pc, radius)) {
      std::fprintf(stderr, "indexed crop of a piece differs from the reference\n");
      return 1;
    }
  }

  char row[512];
  std::string md = "# Geometry stages, per line\n\n";
  md += "Machine: " + shell("lscpu | grep 'Model name' | sed 's/Model name: *//'") + ", nproc " + shell("nproc") +
        ", one thread.\n";
  std::snprintf(row, sizeof row,
                "Scene: generated train scene 0 (%zu points, %zu lines, %zu m of line each), crop radius %.1f m, "
                "mean crop %zu points, P = %d, L = %d; median of %d repetitions.\n\n",
                sc.cloud.size(), n_lines, (size_t)(2 * cfg.line_half_length), radius, crop_total / n_lines, P, L,
                reps);
  md += row;
  md += "| step | median (us) | ratio |\n|---|---:|---:|\n";
  for (size_t c = 0; c < cells.size(); ++c) {
    std::snprintf(row, sizeof row, "| GridIndex::build (per scene, cell %.2f m) | %.1f | |\n", cells[c], t_build[c]);
    md += row;
    std::snprintf(row, sizeof row, "| crop_polyline (grid index, cell %.2f m) | %.1f | %.2f |\n", cells[c], t_crops[c],
                  t_crops[c] / t_crop);
    md += row;
  }
  std::snprintf(row, sizeof row, "| crop_polyline_reference (brute force) | %.1f | %.1fx slower |\n", t_ref, t_ref / t_crop);
  md += row;
  std::snprintf(row, sizeof row, "| resample_indices + gather_points | %.1f | |\n", t_resample);
  md += row;
  std::snprintf(row, sizeof row, "| resample_polyline + center_sample + perturb_line | %.1f | |\n", t_center_perturb);
  md += row;
  std::snprintf(row, sizeof row,
                "\nThe shipped pipeline's samples: %zu pieces of <= 10 m, perturbed to %d points, cropped around the "
                "noisy piece (cell %.2f m), mean crop %zu points; microseconds per piece, median of %d, per kernel:\n\n"
                "| crop kernel | us per piece | vs scalar |\n|---|---:|---:|\n",
                pieces.size(), L, radius / 2, piece_points, reps);
  md += row;
  for (size_t k = 0; k < kernels.size(); ++k) {
    const double t = median_of(t_piece[k]), t_scalar = median_of(t_piece.back());
    std::snprintf(row, sizeof row, "| %s | %.1f | %.2fx |\n", kernels[k].c_str(), t, t_scalar / t);
    md += row;
  }
  std::snprintf(row, sizeof row, "\nPer line (indexed crop + resample + center + perturb): %.1f us -> %.0f lines/s on one core.\n",
                t_crop + t_resample + t_center_perturb, 1e6 / (t_crop + t_resample + t_center_perturb));
  md += row;
  std::fputs(md.c_str(), stdout);
  sl::write_file_atomic(out_path, md);
  return 0;
}
