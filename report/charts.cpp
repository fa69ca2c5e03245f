#include "report/charts.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace sl::report {

namespace {

// Margins of the plot inside the chart, in pixels: room for the y tick labels on the left,
// the legend on top and the x tick labels and axis label below.
constexpr int kLeft = 70, kRight = 18, kTop = 26, kBottom = 44;

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

bool finite(const XY& p) { return std::isfinite(p.x) && std::isfinite(p.y); }

}  // namespace

std::vector<XY> downsample_minmax(const std::vector<XY>& pts, int buckets) {
  std::vector<XY> in;
  in.reserve(pts.size());
  for (const auto& p : pts)
    if (finite(p)) in.push_back(p);
  if (buckets < 1) buckets = 1;
  if (in.size() <= (size_t)2 * buckets) return in;
  const double x0 = in.front().x, x1 = in.back().x;
  const double span = x1 > x0 ? x1 - x0 : 1.0;
  std::vector<XY> out;
  out.reserve((size_t)2 * buckets);
  size_t i = 0;
  while (i < in.size()) {
    const int b = std::min(buckets - 1, (int)((in[i].x - x0) / span * buckets));
    size_t lo = i, hi = i, j = i;
    for (; j < in.size() && std::min(buckets - 1, (int)((in[j].x - x0) / span * buckets)) == b; ++j) {
      if (in[j].y < in[lo].y) lo = j;
      if (in[j].y > in[hi].y) hi = j;
    }
    out.push_back(in[std::min(lo, hi)]);
    if (lo != hi) out.push_back(in[std::max(lo, hi)]);
    i = j;
  }
  return out;
}

std::vector<double> smooth_ema(const std::vector<double>& y, double weight) {
  std::vector<double> out(y.size());
  double last = 0, debias = 1;
  int64_t n = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    if (!std::isfinite(y[i])) {  // a NaN does not poison the rest of the curve
      out[i] = y[i];
      continue;
    }
    last = last * weight + (1 - weight) * y[i];
    ++n;
    debias = 1 - std::pow(weight, (double)n);
    out[i] = debias > 0 ? last / debias : y[i];
  }
  return out;
}

std::vector<double> nice_ticks(double lo, double hi, int target) {
  std::vector<double> t;
  if (!(hi > lo) || !std::isfinite(lo) || !std::isfinite(hi)) return t;
  target = std::max(1, target);
  const int e = (int)std::floor(std::log10((hi - lo) / target));
  // The 1, 2 or 5 x 10^e (or 10^(e+1)) step whose tick count is nearest the target.
  double best_m = 1;
  int best_e = e;
  double best_miss = INFINITY;
  constexpr double kMantissa[] = {1, 2, 5, 1};
  for (int k = 0; k < 4; ++k) {
    const double m = kMantissa[k];
    const int ee = k == 3 ? e + 1 : e;
    const double miss = std::abs((hi - lo) / (m * std::pow(10, ee)) - target);
    if (miss < best_miss - 1e-9) best_miss = miss, best_m = m, best_e = ee;
  }
  // Ticks as integer multiples of m, scaled by 10^e last (dividing for e < 0), so that 0.6 is
  // 6 / 10 and not 3 x 0.2 = 0.6000000000000001.
  const double scale = std::pow(10, std::abs(best_e));
  auto value = [&](long long k) { return best_e >= 0 ? k * best_m * scale : k * best_m / scale; };
  const double step = value(1);
  for (long long k = (long long)std::ceil(lo / step - 1e-9); value(k) <= hi + step * 1e-9; ++k) t.push_back(value(k));
  return t;
}

std::vector<double> log_ticks(double lo, double hi) {
  std::vector<double> t;
  if (!(lo > 0) || !(hi > lo)) return t;
  const int e0 = (int)std::floor(std::log10(lo) + 1e-9), e1 = (int)std::ceil(std::log10(hi) - 1e-9);
  const bool fine = e1 - e0 < 3;
  for (int e = e0; e <= e1; ++e)
    for (double m : fine ? std::vector<double>{1, 2, 5} : std::vector<double>{1}) {
      const double v = m * std::pow(10, e);
      if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) t.push_back(v);
    }
  return t;
}

std::string tick_label(double v) {
  const double a = std::abs(v);
  if (a >= 1e6) return fmt("%gM", v / 1e6);
  if (a >= 1e4) return fmt("%gk", v / 1e3);
  return fmt("%g", v);
}

bool wants_log_scale(const std::vector<XY>& pts) {
  double lo = INFINITY, hi = 0;
  for (const auto& p : pts) {
    if (!finite(p)) continue;
    if (p.y <= 0) return false;
    lo = std::min(lo, p.y);
    hi = std::max(hi, p.y);
  }
  return hi > 0 && hi / lo >= 100;
}

int plot_width(int width) { return std::max(1, width - kLeft - kRight); }

std::string html_escape(const std::string& s) {
  std::string o;
  o.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      case '\'': o += "&#39;"; break;
      default: o += c;
    }
  }
  return o;
}

std::string render_chart(const Chart& c) {
  const int W = c.width, H = c.height, pw = plot_width(W), ph = std::max(1, H - kTop - kBottom);
  std::ostringstream o;
  o << "<svg id=\"" << html_escape(c.id) << "\" class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W
    << "\" height=\"" << H << "\" viewBox=\"0 0 " << W << " " << H << "\" role=\"img\">";

  std::vector<XY> all;
  for (const auto& s : c.series)
    for (const auto& p : s.points)
      if (finite(p)) all.push_back(p);
  if (all.empty()) {
    o << "<text x=\"" << W / 2 << "\" y=\"" << H / 2 << "\" text-anchor=\"middle\" class=\"empty\">no data yet</text></svg>";
    return o.str();
  }

  double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
  for (const auto& p : all) {
    x0 = std::min(x0, p.x), x1 = std::max(x1, p.x);
    y0 = std::min(y0, p.y), y1 = std::max(y1, p.y);
  }
  if (x1 <= x0) x0 -= 0.5, x1 += 0.5;
  const bool log_y = c.y_scale == Chart::YScale::Log ? y0 > 0
                     : c.y_scale == Chart::YScale::Auto ? wants_log_scale(all)
                                                        : false;
  std::vector<double> yt;
  if (c.y_max > c.y_min) {
    y0 = c.y_min, y1 = c.y_max;
    yt = nice_ticks(y0, y1, 5);
  } else if (log_y) {
    y0 = std::pow(10, std::floor(std::log10(y0)));
    y1 = std::pow(10, std::ceil(std::log10(y1)));
    yt = log_ticks(y0, y1);
  } else {
    if (c.y_from_zero) y0 = std::min(0.0, y0);
    if (y1 <= y0) {
      const double pad = y0 != 0 ? std::abs(y0) * 0.1 : 1;
      y0 -= pad, y1 += pad;
    } else {
      const double pad = (y1 - y0) * 0.05;
      if (!(c.y_from_zero && y0 == 0)) y0 -= pad;
      y1 += pad;
    }
    yt = nice_ticks(y0, y1, 5);
  }
  auto ty = [&](double y) { return log_y ? std::log10(y) : y; };
  const double ty0 = ty(y0), ty1 = ty(y1);
  auto px = [&](double x) { return kLeft + (x - x0) / (x1 - x0) * pw; };
  auto py = [&](double y) { return kTop + ph - (ty(y) - ty0) / (ty1 - ty0) * ph; };

  // Grid and ticks.
  o << "<g class=\"grid\">";
  for (double v : yt)
    o << "<line x1=\"" << kLeft << "\" x2=\"" << kLeft + pw << "\" y1=\"" << fmt("%.1f", py(v)) << "\" y2=\""
      << fmt("%.1f", py(v)) << "\"/>";
  const std::vector<double> xt = nice_ticks(x0, x1, std::max(4, pw / 90));
  for (double v : xt)
    o << "<line y1=\"" << kTop << "\" y2=\"" << kTop + ph << "\" x1=\"" << fmt("%.1f", px(v)) << "\" x2=\""
      << fmt("%.1f", px(v)) << "\"/>";
  o << "</g><g class=\"ticks\">";
  for (double v : yt)
    o << "<text x=\"" << kLeft - 6 << "\" y=\"" << fmt("%.1f", py(v) + 4) << "\" text-anchor=\"end\">"
      << tick_label(v) << "</text>";
  for (double v : xt)
    o << "<text x=\"" << fmt("%.1f", px(v)) << "\" y=\"" << kTop + ph + 16 << "\" text-anchor=\"middle\">"
      << tick_label(v) << "</text>";
  o << "</g>";
  o << "<rect class=\"frame\" x=\"" << kLeft << "\" y=\"" << kTop << "\" width=\"" << pw << "\" height=\"" << ph
    << "\"/>";
  o << "<text class=\"axis\" x=\"" << kLeft + pw / 2 << "\" y=\"" << H - 6 << "\" text-anchor=\"middle\">"
    << html_escape(c.x_label) << "</text>";
  o << "<text class=\"axis\" transform=\"translate(14," << kTop + ph / 2 << ") rotate(-90)\" text-anchor=\"middle\">"
    << html_escape(c.y_label) << (log_y ? " (log scale)" : "") << "</text>";

  // Series: clipped to the plot so a fixed range cannot draw over the axes.
  o << "<clipPath id=\"" << html_escape(c.id) << "-clip\"><rect x=\"" << kLeft << "\" y=\"" << kTop - 3
    << "\" width=\"" << pw << "\" height=\"" << ph + 6 << "\"/></clipPath><g clip-path=\"url(#" << html_escape(c.id)
    << "-clip)\">";
  for (const auto& s : c.series) {
    std::vector<XY> drawn = downsample_minmax(s.points, pw);
    if (log_y) drawn.erase(std::remove_if(drawn.begin(), drawn.end(), [](const XY& p) { return p.y <= 0; }), drawn.end());
    o << "<polyline data-series=\"" << html_escape(s.name) << "\" data-n=\"" << s.points.size()
      << "\" fill=\"none\" stroke=\"" << s.color << "\" stroke-width=\"" << s.width << "\" stroke-opacity=\""
      << s.opacity << "\"" << (s.dashed ? " stroke-dasharray=\"5 3\"" : "") << " points=\"";
    for (size_t i = 0; i < drawn.size(); ++i)
      o << (i ? " " : "") << fmt("%.1f", px(drawn[i].x)) << "," << fmt("%.1f", py(drawn[i].y));
    o << "\"/>";
    // A lone point draws no line (a run that logged once): it gets a dot.
    if (s.markers || drawn.size() == 1)
      for (const auto& p : drawn)
        o << "<circle cx=\"" << fmt("%.1f", px(p.x)) << "\" cy=\"" << fmt("%.1f", py(p.y)) << "\" r=\"3\" fill=\""
          << s.color << "\"/>";
  }
  o << "</g>";

  // Legend along the top.
  int lx = kLeft;
  o << "<g class=\"legend\">";
  for (const auto& s : c.series) {
    o << "<line x1=\"" << lx << "\" x2=\"" << lx + 18 << "\" y1=\"12\" y2=\"12\" stroke=\"" << s.color
      << "\" stroke-width=\"3\"" << (s.dashed ? " stroke-dasharray=\"5 3\"" : "") << "/><text x=\"" << lx + 22
      << "\" y=\"16\">" << html_escape(s.name) << "</text>";
    lx += 34 + 7 * (int)s.name.size();
  }
  o << "</g></svg>";
  return o.str();
}

}  // namespace sl::report
