#include "train/metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

namespace sl {

Spread spread_of(std::vector<double> v) {
  Spread s;
  if (v.empty()) return s;
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / (double)v.size();
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  s.median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  s.p95 = v[(size_t)std::ceil(0.95 * (double)n) - 1];
  return s;
}

void RefineStats::add(const float* noisy, const float* pred, const float* target, const float* truth, int64_t L,
                      const std::string& category) {
  std::vector<float> refined((size_t)L * 3);
  for (int64_t i = 0; i < L * 3; ++i) {
    refined[i] = noisy[i] + pred[i];
    sq_error += std::pow((double)pred[i] - target[i], 2);
  }
  elements += L * 3;
  const double before = mean_line_error(noisy, truth, L), after = mean_line_error(refined.data(), truth, L);
  PointErrors& pe = by_category[category];
  ++pe.lines;
  for (int64_t i = 0; i < L; ++i) {
    pe.before.push_back(point_to_polyline(noisy + i * 3, truth, L));
    pe.after.push_back(point_to_polyline(refined.data() + i * 3, truth, L));
  }
  err_before += before;
  err_after += after;
  improved += after < before;
  ++lines;
}

Spread RefineStats::after_spread() const {
  std::vector<double> all;
  for (const auto& [name, pe] : by_category) all.insert(all.end(), pe.after.begin(), pe.after.end());
  return spread_of(std::move(all));
}

std::string RefineStats::fixed_point_line() const {
  const Spread s = after_spread();
  char buf[200];
  std::snprintf(buf, sizeof buf, "fixed point: the true lines refined end %.3f m from them (median %.3f, p95 %.3f m)",
                s.mean, s.median, s.p95);
  std::string out = buf;
  std::string sep = "; ";
  for (const auto& [name, pe] : by_category) {
    std::snprintf(buf, sizeof buf, " %.3f", spread_of(pe.after).mean);
    out += sep + (name.empty() ? std::string("(no category)") : name) + buf;
    sep = ", ";
  }
  return out + (by_category.size() > 0 ? " m" : "");
}

std::vector<std::string> RefineStats::category_lines() const {
  std::vector<std::string> out;
  for (const auto& [name, pe] : by_category) {
    const Spread a = spread_of(pe.after), b = spread_of(pe.before);
    char buf[256];  // numbers only: the name (any length) is prepended as a string
    std::snprintf(buf, sizeof buf, ": %lld lines, point error mean %.3f m, median %.3f m, p95 %.3f m (input %.3f / %.3f / %.3f m)",
                  (long long)pe.lines, a.mean, a.median, a.p95, b.mean, b.median, b.p95);
    out.push_back((name.empty() ? std::string("(no category)") : name) + buf);
  }
  return out;
}

}  // namespace sl
