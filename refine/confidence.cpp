#include "refine/confidence.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <tuple>

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>

#include "graph/atomic_file.h"
#include "graph/error.h"

namespace sl {

namespace {

constexpr double kOneSigma = 0.682689492137086, kTwoSigma = 0.954499736103642;

// The negative log-likelihood (without constants) of errors under N(0, (a s)^2 + b^2).
double nll(const std::vector<double>& s, const std::vector<double>& e, double a, double b) {
  double sum = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const double v = a * a * s[i] * s[i] + b * b;
    if (!(v > 0)) return std::numeric_limits<double>::infinity();
    sum += std::log(v) + e[i] * e[i] / v;
  }
  return sum;
}

}  // namespace

double AxisCalibration::sigma(double spread) const {
  if (knots.empty()) return std::sqrt(a * a * spread * spread + b * b);
  if (!(spread > knots.front()[0])) return knots.front()[1];
  if (spread >= knots.back()[0]) return knots.back()[1];
  const auto hi = std::upper_bound(knots.begin(), knots.end(), spread,
                                   [](double s, const std::array<double, 2>& k) { return s < k[0]; });
  const auto lo = hi - 1;
  const double u = ((*hi)[0] > (*lo)[0]) ? (spread - (*lo)[0]) / ((*hi)[0] - (*lo)[0]) : 0.0;
  return (*lo)[1] + u * ((*hi)[1] - (*lo)[1]);
}

const std::array<AxisCalibration, 2>& Calibration::of(const std::string& category) const {
  auto it = fits.find(category);
  if (it != fits.end()) return it->second;
  it = fits.find("");
  if (it == fits.end()) throw Error("calibration: no fit for category '" + category + "' and none over all categories");
  return it->second;
}

AxisCalibration fit_axis(const std::vector<double>& spread, const std::vector<double>& error) {
  if (spread.size() != error.size())
    throw Error("fit_axis: " + std::to_string(spread.size()) + " spreads for " + std::to_string(error.size()) + " errors");
  if (spread.size() < 2) throw Error("fit_axis: at least 2 samples are needed, got " + std::to_string(spread.size()));
  // Search in log10 space; a = 0 is a candidate (a constant sigma, b = the rms error), b = 0 is not
  // (a vertex whose views agree exactly would get sigma 0: any shift would pass the gate; a file
  // with b = 0 is refused when read).
  double rms = 0;
  for (double e : error) rms += e * e;
  rms = std::sqrt(rms / double(error.size()));
  AxisCalibration best{0, std::max(rms, 1e-9)};
  double best_nll = nll(spread, error, best.a, best.b);
  auto consider = [&](double a, double b) {
    const double f = nll(spread, error, a, b);
    if (f < best_nll) best_nll = f, best = {a, b};
  };
  for (int i = -1; i <= 48; ++i)   // a: 0, 1e-2 .. 1e2
    for (int j = 0; j <= 48; ++j)  // b: 1e-5 .. 1
      consider(i < 0 ? 0.0 : std::pow(10.0, -2.0 + i / 12.0), std::pow(10.0, -5.0 + j * 5.0 / 48.0));
  double step = 1.0 / 12.0;  // decades
  for (int round = 0; round < 5; ++round) {
    const AxisCalibration m = best;
    for (int i = -5; i <= 5; ++i)
      for (int j = -5; j <= 5; ++j)
        consider(m.a > 0 ? m.a * std::pow(10.0, i * step / 5) : 0.0, std::max(1e-5, m.b * std::pow(10.0, j * step / 5)));
    step /= 5;
  }
  return best;
}

namespace {

// The sigma whose 1 and 2 sigma cover the sorted absolute errors `e` nearest the Gaussian's 68.3% and
// 95.4% (least squares of the two misses). The shares change only where sigma or 2 sigma passes an
// error, so those are the candidates.
double coverage_sigma(const std::vector<double>& e) {
  const double n = double(e.size());
  auto share = [&](double x) { return double(std::upper_bound(e.begin(), e.end(), x) - e.begin()) / n; };
  double best = e.empty() ? 0.0 : e.back(), best_miss = std::numeric_limits<double>::infinity();
  for (double v : e)
    for (double s : {v, v / 2}) {
      if (!(s > 0)) continue;
      const double m1 = share(s) - kOneSigma, m2 = share(2 * s) - kTwoSigma, miss = m1 * m1 + m2 * m2;
      if (miss < best_miss) best_miss = miss, best = s;
    }
  return best;
}

}  // namespace

AxisCalibration fit_axis_binned(const std::vector<double>& spread, const std::vector<double>& error, int64_t min_per_bin) {
  AxisCalibration f = fit_axis(spread, error);
  const size_t n = spread.size(), bins = 10;
  if (int64_t(n) < int64_t(bins) * min_per_bin) return f;
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return spread[x] < spread[y]; });
  // Tenths by spread, then pooled until sigma does not fall as the spread grows.
  struct Bin {
    size_t lo, hi;  // into `order`
    double sigma = 0;
  };
  auto fit_bin = [&](Bin& b) {
    std::vector<double> e;
    for (size_t i = b.lo; i < b.hi; ++i) e.push_back(std::fabs(error[order[i]]));
    std::sort(e.begin(), e.end());
    b.sigma = coverage_sigma(e);
  };
  std::vector<Bin> v;
  for (size_t k = 0; k < bins; ++k) {
    Bin b{k * n / bins, (k + 1) * n / bins};
    fit_bin(b);
    v.push_back(b);
  }
  for (size_t k = 1; k < v.size();) {
    if (v[k].sigma >= v[k - 1].sigma) {
      ++k;
      continue;
    }
    v[k - 1].hi = v[k].hi;
    v.erase(v.begin() + long(k));
    fit_bin(v[k - 1]);
    k = std::max<size_t>(k - 1, 1);
  }
  for (const Bin& b : v) {
    const double median = spread[order[(b.lo + b.hi) / 2]];
    if (!f.knots.empty() && median <= f.knots.back()[0]) {  // equal spreads: one knot, the larger sigma
      f.knots.back()[1] = std::max(f.knots.back()[1], b.sigma);
      continue;
    }
    f.knots.push_back({median, b.sigma});
  }
  if (f.knots.front()[1] <= 0) f.knots.clear();  // a tenth without error: keep the (a, b) model
  return f;
}

Calibration fit_calibration(const std::vector<ConfidenceSample>& samples, int fit_split, int64_t min_per_category,
                            bool binned) {
  std::map<std::string, std::array<std::vector<double>, 4>> by;  // spread, error: across then vertical
  for (const auto& x : samples) {
    if (x.split != fit_split) continue;
    for (const std::string& key : {std::string(), x.category})
      for (int a = 0; a < 2; ++a) {
        auto& v = by[key];
        v[size_t(2 * a)].push_back(x.spread[size_t(a)]);
        v[size_t(2 * a + 1)].push_back(x.error[size_t(a)]);
      }
  }
  Calibration cal;
  for (const auto& [key, v] : by) {
    if (!key.empty() && int64_t(v[0].size()) < min_per_category) continue;
    if (v[0].size() < 2) continue;
    cal.fits[key] = binned ? std::array<AxisCalibration, 2>{fit_axis_binned(v[0], v[1]), fit_axis_binned(v[2], v[3])}
                           : std::array<AxisCalibration, 2>{fit_axis(v[0], v[1]), fit_axis(v[2], v[3])};
  }
  if (cal.fits.find("") == cal.fits.end())
    throw Error("calibration: split " + std::to_string(fit_split) + " holds fewer than 2 refined vertices to fit on");
  return cal;
}

bool CoverageRow::calibrated(double tolerance) const {
  auto ok = [&](double w1, double w2) {
    return std::fabs(w1 - kOneSigma) <= tolerance && std::fabs(w2 - kTwoSigma) <= tolerance;
  };
  if (n == 0 || !ok(within1, within2) || deciles.size() < 10) return false;
  for (const auto& d : deciles)
    if (!ok(d.within1, d.within2)) return false;
  return true;
}

std::vector<CoverageRow> coverage(const Calibration& cal, const std::vector<ConfidenceSample>& samples, int split) {
  std::map<std::string, std::array<std::vector<std::pair<double, double>>, 2>> by;  // (sigma, |error|)
  for (const auto& x : samples) {
    if (split >= 0 && x.split != split) continue;
    const auto& f = cal.of(x.category);
    for (int a = 0; a < 2; ++a) {
      const std::pair<double, double> p{f[size_t(a)].sigma(x.spread[size_t(a)]), std::fabs(x.error[size_t(a)])};
      by[x.category][size_t(a)].push_back(p);
      by["\x7f" "all"][size_t(a)].push_back(p);  // sorts last
    }
  }
  std::vector<CoverageRow> rows;
  for (auto& [key, axes] : by)
    for (int a = 0; a < 2; ++a) {
      auto& v = axes[size_t(a)];
      CoverageRow r;
      r.category = key == "\x7f" "all" ? "all" : key;
      r.axis = a;
      r.n = int64_t(v.size());
      if (v.empty()) continue;
      // By sigma alone (the samples' order among equal sigmas: sorting by the error too would fill the
      // first tenth of a constant sigma with the smallest errors).
      std::stable_sort(v.begin(), v.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
      double w1 = 0, w2 = 0, ms = 0, se = 0;
      for (const auto& [s, e] : v) w1 += e <= s, w2 += e <= 2 * s, ms += s, se += e * e;
      r.within1 = w1 / double(v.size()), r.within2 = w2 / double(v.size());
      r.mean_sigma = ms / double(v.size()), r.rms_error = std::sqrt(se / double(v.size()));
      // Tenths by sigma; a bin never splits equal sigmas, so a sigma that takes fewer than ten values
      // makes fewer than ten bins (and is not calibrated: it cannot say which vertices are surer).
      for (size_t lo = 0; lo < v.size();) {
        size_t hi = std::max(lo + 1, std::min(v.size(), (r.deciles.size() + 1) * v.size() / 10));
        while (hi < v.size() && v[hi].first == v[hi - 1].first) ++hi;
        CoverageRow::Decile d;
        d.n = int64_t(hi - lo);
        d.sigma_lo = v[lo].first, d.sigma_hi = v[hi - 1].first;
        for (size_t i = lo; i < hi; ++i) d.within1 += v[i].second <= v[i].first, d.within2 += v[i].second <= 2 * v[i].first;
        d.within1 /= double(d.n), d.within2 /= double(d.n);
        r.deciles.push_back(d);
        lo = hi;
      }
      rows.push_back(std::move(r));
    }
  return rows;
}

// d(share within 1 sigma) / d(log scale) for Gaussian errors: 2 phi(1).
const double kShareSlope = 2 * std::exp(-0.5) / std::sqrt(2 * M_PI);

ScaleSpread scale_spread(const Calibration& cal, const std::vector<ConfidenceSample>& samples, int split, int axis,
                         int64_t min_per_tile) {
  std::map<int, std::pair<double, int64_t>> by_tile;  // sum of (error / sigma)^2, count
  for (const auto& x : samples) {
    if ((split >= 0 && x.split != split) || x.tile < 0) continue;
    const double sigma = cal.of(x.category)[size_t(axis)].sigma(x.spread[size_t(axis)]);
    const double z = x.error[size_t(axis)] / sigma;
    if (!std::isfinite(z)) continue;
    auto& t = by_tile[x.tile];
    t.first += z * z, t.second++;
  }
  std::vector<double> logs;
  for (const auto& [tile, t] : by_tile)
    if (t.second >= min_per_tile && t.first > 0) logs.push_back(0.5 * std::log(t.first / double(t.second)));
  ScaleSpread r;
  r.tiles = int(logs.size());
  if (r.tiles < 2) return r;
  double mean = 0, var = 0;
  for (double v : logs) mean += v;
  mean /= double(r.tiles);
  for (double v : logs) var += (v - mean) * (v - mean);
  r.log_sd = std::sqrt(var / double(r.tiles - 1));
  r.share_2se = 100 * kShareSlope * 2 * r.log_sd / std::sqrt(double(r.tiles));
  return r;
}

std::string scale_spread_text(const Calibration& cal, const std::vector<ConfidenceSample>& samples, int split,
                              const std::string& tiles_word) {
  const ScaleSpread a = scale_spread(cal, samples, split, kAcross), v = scale_spread(cal, samples, split, kVertical);
  if (a.tiles < 2 || v.tiles < 2) return "";
  const double sd = std::max(a.log_sd, v.log_sd);
  const long long need = (long long)std::ceil(std::pow(100 * kShareSlope * 2 * sd / 5, 2));
  char b[512];
  std::snprintf(b, sizeof b,
                "its %d %s pin the share within 1 sigma to +-%.1f points across and +-%.1f vertically (errors over "
                "sigma differ from one to the next: x%.2f and x%.2f, one standard deviation); about %lld %s would pin "
                "+-5",
                a.tiles, tiles_word.c_str(), a.share_2se, v.share_2se, std::exp(a.log_sd), std::exp(v.log_sd), need,
                tiles_word.c_str());
  return b;
}

std::string to_text(const std::vector<CoverageRow>& rows) {
  std::string s =
      "  category                 axis       vertices  mean sigma  rms error  within 1 sigma  within 2 sigma  deciles "
      "within 1 sigma (low sigma .. high)  calibrated (+-5 points, every decile)\n";
  char b[512];
  for (const auto& r : rows) {
    std::string dec;
    for (const auto& d : r.deciles) {
      char x[16];
      std::snprintf(x, sizeof x, " %2.0f", 100 * d.within1);
      dec += x;
    }
    std::snprintf(b, sizeof b, "  %-24s %-9s %9lld  %8.4f m  %7.4f m  %13.1f%%  %13.1f%%  %-32s  %s\n", r.category.c_str(),
                  axis_name(r.axis), (long long)r.n, r.mean_sigma, r.rms_error, 100 * r.within1, 100 * r.within2,
                  dec.c_str(), r.calibrated() ? "yes" : "no");
    s += b;
  }
  s += "  (the target: 68.3% within 1 sigma and 95.4% within 2, overall and in each tenth of the vertices by sigma)\n";
  // How far a tenth's share moves by chance alone, so that a miss of a few points in a small set is
  // read as what it is: one standard error of a binomial share of 68.3% over a tenth of n vertices.
  int64_t lo = 0, hi = 0;
  for (const auto& r : rows)
    if (r.n >= 10) lo = lo == 0 ? r.n : std::min(lo, r.n), hi = std::max(hi, r.n);
  if (lo > 0) {
    auto se = [](int64_t n) { return 100 * std::sqrt(kOneSigma * (1 - kOneSigma) / (double(n) / 10)); };
    std::snprintf(b, sizeof b,
                  "  (by chance alone a tenth's share within 1 sigma scatters by +-%.1f points (one standard error) in "
                  "a row of %lld vertices, +-%.1f in one of %lld; for +-5 points to be two standard errors a row needs "
                  "about %lld vertices)\n",
                  se(lo), (long long)lo, se(hi), (long long)hi,
                  (long long)std::ceil(10 * kOneSigma * (1 - kOneSigma) / (0.05 * 0.05 / 4)));
    s += b;
  }
  return s;
}

void write_confidence_samples(const std::string& path, const std::vector<ConfidenceSample>& samples) {
  std::string s = "category,split,tile,vertex,spread_across_m,spread_vertical_m,error_across_m,error_vertical_m\n";
  char b[256];
  for (const auto& x : samples) {
    std::snprintf(b, sizeof b, ",%d,%d,%lld,%.9g,%.9g,%.9g,%.9g\n", x.split, x.tile, (long long)x.vertex, x.spread[0],
                  x.spread[1], x.error[0], x.error[1]);
    s += x.category.find_first_of(",\"\n") == std::string::npos ? x.category : "\"" + x.category + "\"";
    s += b;
  }
  write_file_atomic(path, s);
}

void write_calibration(const std::string& path, const Calibration& cal) {
  auto num = [](double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%.9g", v);
    return std::string(b);
  };
  auto esc = [](const std::string& t) {
    std::string o;
    for (char c : t) {
      if (c == '"' || c == '\\') o += '\\';
      if ((unsigned char)c < 0x20) {
        o += ' ';
        continue;
      }
      o += c;
    }
    return o;
  };
  std::string o = "{\n  \"format\": \"streamline calibration 1\",\n  \"note\": \"" + esc(cal.note) +
                  "\",\n  \"checkpoint\": \"" + esc(cal.checkpoint) + "\",\n  \"model\": \"sigma = sqrt((a * spread)^2 + b^2), metres; where knots are given, sigma at a spread is read from "
                  "them instead (linear between, flat beyond the ends)\",\n  \"fits\": {";
  bool first = true;
  for (const auto& [key, f] : cal.fits) {
    o += std::string(first ? "" : ",") + "\n    \"" + esc(key) + "\": {";
    for (int a = 0; a < 2; ++a) {
      o += std::string(a ? ", " : "") + "\"" + axis_name(a) + "\": {\"a\": " + num(f[size_t(a)].a) +
           ", \"b\": " + num(f[size_t(a)].b);
      if (!f[size_t(a)].knots.empty()) {
        o += ", \"knots\": [";
        for (size_t k = 0; k < f[size_t(a)].knots.size(); ++k)
          o += std::string(k ? ", " : "") + "[" + num(f[size_t(a)].knots[k][0]) + ", " + num(f[size_t(a)].knots[k][1]) + "]";
        o += "]";
      }
      o += "}";
    }
    o += "}";
    first = false;
  }
  o += "\n  }\n}\n";
  write_file_atomic(path, o);
}

Calibration read_calibration(const std::string& path) {
  const std::string text = read_file(path);
  rapidjson::Document d;
  d.Parse(text.c_str(), text.size());
  if (d.HasParseError())
    fail(path, std::string("not JSON: ") + rapidjson::GetParseError_En(d.GetParseError()) + " at byte " +
                   std::to_string(d.GetErrorOffset()));
  if (!d.IsObject() || !d.HasMember("format") || !d["format"].IsString() ||
      std::string(d["format"].GetString()) != "streamline calibration 1")
    fail(path, "not a streamline calibration (\"format\": \"streamline calibration 1\" expected)");
  Calibration cal;
  if (d.HasMember("note") && d["note"].IsString()) cal.note = d["note"].GetString();
  if (d.HasMember("checkpoint") && d["checkpoint"].IsString()) cal.checkpoint = d["checkpoint"].GetString();
  if (!d.HasMember("fits") || !d["fits"].IsObject()) fail(path, "\"fits\" must be an object");
  for (auto it = d["fits"].MemberBegin(); it != d["fits"].MemberEnd(); ++it) {
    const std::string key = it->name.GetString();
    std::array<AxisCalibration, 2> f;
    for (int a = 0; a < 2; ++a) {
      const char* name = axis_name(a);
      if (!it->value.IsObject() || !it->value.HasMember(name) || !it->value[name].IsObject())
        fail(path, "fits/" + key + ": \"" + name + "\" must be an object");
      const auto& ax = it->value[name];
      for (const char* p : {"a", "b"})
        if (!ax.HasMember(p) || !ax[p].IsNumber() || !std::isfinite(ax[p].GetDouble()) || ax[p].GetDouble() < 0)
          fail(path, "fits/" + key + "/" + name + "/" + p + " must be a finite number >= 0");
      f[size_t(a)] = {ax["a"].GetDouble(), ax["b"].GetDouble()};
      if (!(f[size_t(a)].b > 0))
        fail(path, "fits/" + key + "/" + name + "/b must be > 0 (a vertex whose views agree exactly would get sigma 0)");
      if (ax.HasMember("knots")) {
        const std::string at = "fits/" + key + "/" + name + "/knots";
        if (!ax["knots"].IsArray()) fail(path, at + " must be an array of [spread, sigma] pairs");
        for (const auto& k : ax["knots"].GetArray()) {
          if (!k.IsArray() || k.Size() != 2 || !k[0].IsNumber() || !k[1].IsNumber() || !std::isfinite(k[0].GetDouble()) ||
              !std::isfinite(k[1].GetDouble()) || k[0].GetDouble() < 0 || !(k[1].GetDouble() > 0))
            fail(path, at + " must hold [spread, sigma] pairs of finite numbers, spread >= 0 and sigma > 0");
          auto& kn = f[size_t(a)].knots;
          if (!kn.empty() && (k[0].GetDouble() <= kn.back()[0] || k[1].GetDouble() < kn.back()[1]))
            fail(path, at + ": the spreads must ascend and the sigmas must not fall");
          kn.push_back({k[0].GetDouble(), k[1].GetDouble()});
        }
      }
    }
    cal.fits[key] = f;
  }
  if (cal.fits.find("") == cal.fits.end()) fail(path, "fits has no \"\" entry (the fit over every category)");
  return cal;
}

VertexFrame vertex_frames(const VectorMap& map, const std::vector<std::string>& categories) {
  VertexFrame f;
  f.normal.assign(map.vertices.size(), {0, 0});
  f.category.assign(map.vertices.size(), "");
  std::vector<bool> done(map.vertices.size(), false);
  for (const MapLine& l : map.lines) {
    if (!category_matches(l.category, categories)) continue;
    const size_t n = l.points.size();
    for (size_t k = 0; k < n && k < l.vertex.size(); ++k) {
      const uint32_t v = l.vertex[k];
      if (done[v]) continue;
      const Vec3d& a = l.points[k > 0 ? k - 1 : k];
      const Vec3d& b = l.points[k + 1 < n ? k + 1 : k];
      const double tx = b[0] - a[0], ty = b[1] - a[1], len = std::hypot(tx, ty);
      if (len > 0) f.normal[v] = {-ty / len, tx / len};
      f.category[v] = l.category;
      done[v] = true;
    }
  }
  return f;
}

std::vector<std::array<double, 2>> vertex_errors(const VectorMap& truth, const VectorMap& refined,
                                                 const VertexFrame& frames) {
  using Key = std::tuple<int64_t, int64_t, int64_t>;
  std::map<Key, size_t> twin;
  for (size_t i = 0; i < truth.lines.size(); ++i) twin.emplace(Key{truth.lines[i].id, truth.lines[i].member, truth.lines[i].part}, i);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<std::array<double, 2>> out(refined.vertices.size(), {nan, nan});
  std::vector<bool> done(refined.vertices.size(), false);
  for (const MapLine& l : refined.lines) {
    auto it = twin.find(Key{l.id, l.member, l.part});
    if (it == twin.end()) continue;
    const std::vector<Vec3d>& t = truth.lines[it->second].points;
    if (t.empty()) continue;
    for (size_t k = 0; k < l.points.size() && k < l.vertex.size(); ++k) {
      const uint32_t v = l.vertex[k];
      if (done[v]) continue;
      done[v] = true;
      const Vec3d& p = l.points[k];
      // The closest point of the true line in xy, its height interpolated.
      double best = std::numeric_limits<double>::infinity();
      Vec3d c = t[0];
      for (size_t i = 0; i + 1 < t.size() || i == 0; ++i) {
        const Vec3d& a = t[i];
        const Vec3d& b = t.size() > 1 ? t[i + 1] : t[i];
        const double dx = b[0] - a[0], dy = b[1] - a[1], dd = dx * dx + dy * dy;
        const double u = dd > 0 ? std::clamp(((p[0] - a[0]) * dx + (p[1] - a[1]) * dy) / dd, 0.0, 1.0) : 0.0;
        const Vec3d q{a[0] + u * dx, a[1] + u * dy, a[2] + u * (b[2] - a[2])};
        const double dist = std::hypot(p[0] - q[0], p[1] - q[1]);
        if (dist < best) best = dist, c = q;
        if (t.size() == 1) break;
      }
      const auto& n = frames.normal[v];
      const double ex = p[0] - c[0], ey = p[1] - c[1];
      // Across: the horizontal distance, signed by the side of the vertex's normal it lies on.
      const double along_n = ex * n[0] + ey * n[1];
      out[v] = {along_n < 0 ? -best : best, p[2] - c[2]};
    }
  }
  return out;
}

const char* fate_name(VertexFate f) {
  switch (f) {
    case VertexFate::Untouched: return "untouched";
    case VertexFate::NoData: return "no data";
    case VertexFate::Left: return "left as right";
    case VertexFate::Moved: return "moved";
    case VertexFate::Flagged: return "flagged";
  }
  return "?";
}

GateResult gate_moves(const VectorMap& map, const std::vector<Vec3d>& d, const MapRefineReport& report,
                      const Calibration& cal, const GateOptions& options, const std::vector<std::string>& categories) {
  const size_t nv = map.vertices.size();
  if (d.size() != nv || report.spread.size() != nv || report.covered.size() != nv || report.on_clouds.size() != nv)
    throw Error("gate_moves: the displacements or the report do not match the map's " + std::to_string(nv) + " vertices");
  if (!(options.k >= 0) || !(options.flag_sigma > 0)) throw Error("gate_moves: k must be >= 0 and flag_sigma > 0");
  const VertexFrame frames = vertex_frames(map, categories);
  GateResult g;
  g.d.assign(nv, {0, 0, 0});
  g.fate.assign(nv, VertexFate::Untouched);
  g.sigma.assign(nv, {0, 0});
  g.shift.assign(nv, {0, 0});
  for (size_t v = 0; v < nv; ++v) {
    if (report.covered[v] == 0) {
      if (report.on_clouds[v]) g.fate[v] = VertexFate::NoData;
      continue;
    }
    const auto& f = cal.of(frames.category[v]);
    const auto& n = frames.normal[v];
    const double across = d[v][0] * n[0] + d[v][1] * n[1], up = d[v][2];
    const double sa = f[kAcross].sigma(report.spread[v][1]), sz = f[kVertical].sigma(report.spread[v][2]);
    g.sigma[v] = {sa, sz};
    g.shift[v] = {across, up};
    const bool move_across = std::fabs(across) > options.k * sa, move_up = std::fabs(up) > options.k * sz;
    if (move_across) g.d[v][0] = across * n[0], g.d[v][1] = across * n[1];
    if (move_up) g.d[v][2] = up;
    g.fate[v] = sa > options.flag_sigma ? VertexFate::Flagged
                : move_across || move_up ? VertexFate::Moved
                                         : VertexFate::Left;
  }
  return g;
}

void GateTally::add(const GateResult& g) {
  const size_t n = g.fate.size();
  if (passes_ == 0) {
    refined_.assign(n, 0), flagged_.assign(n, 0), no_data_.assign(n, 0), unsettled_now_.assign(n, 0);
    sigma_.assign(n, {0, 0}), shift_.assign(n, {0, 0});
  }
  if (n != refined_.size()) throw Error("GateTally: a pass over another map");
  for (size_t v = 0; v < n; ++v) {
    const VertexFate f = g.fate[v];
    unsettled_now_[v] = std::sqrt(g.d[v][0] * g.d[v][0] + g.d[v][1] * g.d[v][1] + g.d[v][2] * g.d[v][2]) > unsettled_;
    if (f == VertexFate::NoData) no_data_[v] = 1;
    if (f == VertexFate::Left || f == VertexFate::Moved || f == VertexFate::Flagged) {
      refined_[v] = 1;
      flagged_[v] = f == VertexFate::Flagged;
      sigma_[v] = g.sigma[v], shift_[v] = g.shift[v];
    }
  }
  ++passes_;
}

std::vector<VertexFate> GateTally::fates(const std::vector<Vec3d>& total) const {
  std::vector<VertexFate> f(refined_.size(), VertexFate::Untouched);
  if (total.size() != f.size()) throw Error("GateTally: " + std::to_string(total.size()) + " displacements for " +
                                            std::to_string(f.size()) + " vertices");
  for (size_t v = 0; v < f.size(); ++v) {
    const bool moved = total[v][0] != 0 || total[v][1] != 0 || total[v][2] != 0;
    f[v] = flagged_[v] || unsettled_now_[v] ? VertexFate::Flagged
           : moved     ? VertexFate::Moved
           : refined_[v] ? VertexFate::Left
           : no_data_[v] ? VertexFate::NoData
                         : VertexFate::Untouched;
  }
  return f;
}

RefinePass gated_pass(RefinePass inner, const Calibration& cal, const GateOptions& options,
                      std::vector<std::string> categories, GateTally* tally) {
  return [inner = std::move(inner), &cal, options, categories = std::move(categories), tally](
             const SharedMap& map, int pass, MapRefineReport* report) {
    MapRefineReport r;
    const std::vector<Vec3d> d = inner(map, pass, &r);
    GateResult g = gate_moves(map.map, d, r, cal, options, categories);
    if (tally) tally->add(g);
    if (report) *report = std::move(r);
    return std::move(g.d);
  };
}

FateCounts count_fates(const VectorMap& map, const std::vector<VertexFate>& fates, const std::vector<std::string>& categories) {
  const VertexFrame frames = vertex_frames(map, categories);
  FateCounts c;
  for (size_t v = 0; v < fates.size() && v < frames.category.size(); ++v) {
    if (fates[v] == VertexFate::Untouched) continue;
    c.by[frames.category[v]][size_t(fates[v])]++;
    c.by["\x7f" "all"][size_t(fates[v])]++;
  }
  return c;
}

std::string to_text(const FateCounts& c) {
  std::string s = "  category                  moved  left as right  flagged  no data\n";
  char b[160];
  for (const auto& [key, n] : c.by) {
    std::snprintf(b, sizeof b, "  %-24s %6lld %14lld %8lld %8lld\n", key == "\x7f" "all" ? "all" : key.c_str(),
                  (long long)n[size_t(VertexFate::Moved)], (long long)n[size_t(VertexFate::Left)],
                  (long long)n[size_t(VertexFate::Flagged)], (long long)n[size_t(VertexFate::NoData)]);
    s += b;
  }
  return s;
}

}  // namespace sl
