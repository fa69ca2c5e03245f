#include "refine/map_check.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "graph/error.h"
#include "refine/lanelet_check.h"

namespace sl {

namespace {

// Whether any fit of `cal` reads sigma from knots (a calibration per tenth of the spread).
bool has_knots(const Calibration& cal) {
  return std::any_of(cal.fits.begin(), cal.fits.end(), [](const auto& kv) {
    return !kv.second[kAcross].knots.empty() || !kv.second[kVertical].knots.empty();
  });
}

// The passes' `total` on `start` with the moves that break a lanelet undone, as infer writes it; the
// last entry of `errors` (after the last pass) measured again when a lanelet was kept.
LaneletKeep keep_lanelets(const VectorMap& truth, const VectorMap& start, std::vector<Vec3d> total,
                          const std::vector<std::string>& categories, const TileSet& region,
                          std::vector<MapErrorResult>* errors, LaneletsKept* counts) {
  if (start.lanelets.empty()) {
    LaneletKeep k;
    k.d = std::move(total);
    k.undone.assign(k.d.size(), 0);
    return k;
  }
  LaneletKeep k = keep_lanelets_valid(start, std::move(total));
  counts->checked = k.checked, counts->kept = k.kept;
  if (k.kept > 0 && !errors->empty()) errors->back() = map_error(truth, moved_map(start, k.d), categories, &region);
  return k;
}

// The region's tile that holds a point (the lowest index), -1 for none.
int tile_of(const TileSet& region, const Vec3d& p) {
  const auto t = region.touching(BoxXY{p[0], p[1], p[0], p[1]});
  return t.empty() ? -1 : int(*std::min_element(t.begin(), t.end()));
}

// The samples of one pass of an ungated run: the vertices it refined, their spread in that pass
// and the error of `end` there (`end`: the map the pass started from moved by everything so far).
void add_samples(const VectorMap& truth, const VectorMap& end, const MapRefineReport& pass,
                 const std::vector<std::string>& categories, const TileSet& region, std::vector<ConfidenceSample>* out) {
  const VertexFrame frames = vertex_frames(end, categories);
  const std::vector<std::array<double, 2>> err = vertex_errors(truth, end, frames);
  for (size_t v = 0; v < end.vertices.size(); ++v) {
    if (v >= pass.covered.size() || pass.covered[v] == 0 || !std::isfinite(err[v][0])) continue;
    const int t = tile_of(region, end.vertices[v].world);
    if (t < 0) continue;
    ConfidenceSample x;
    x.category = frames.category[v];
    x.spread = {pass.spread[v][1], pass.spread[v][2]};
    x.error = err[v];
    x.split = t % 2;
    x.tile = t;
    x.vertex = int64_t(v);
    out->push_back(std::move(x));
  }
}

// The calibration fitted on the samples of split 0 (the even tiles), its note saying so.
Calibration fit_on_even_tiles(const std::vector<ConfidenceSample>& samples, bool binned, const std::string& who) {
  Calibration cal = fit_calibration(samples, 0, 100, binned);
  int64_t fit = 0;
  for (const auto& x : samples) fit += x.split == 0;
  cal.note = "fitted by " + who + " on the first-pass proposals for " + std::to_string(fit) +
             " vertices of the true map (even tiles)" +
             (has_knots(cal) ? ", per tenth of the spread"
                             : std::string(", sigma = sqrt((a spread)^2 + b^2)") +
                                   (binned ? " (too few vertices for tenths of 20)" : ""));
  return cal;
}

GatedRun gated_run(const SharedMap& truth, const SharedMap& start, const PassOptions& options, const RefinePass& refine,
                   const Calibration& cal, const ConfidenceCheck& c, const std::vector<std::string>& categories,
                   const TileSet& region) {
  GatedRun g;
  GateTally tally(c.gate.unsettled);
  const LaneletKeep keep = keep_lanelets(
      truth.map, start.map,
      refine_in_passes(start, options, gated_pass(refine, cal, c.gate, categories, &tally), &g.passes,
                       [&](const PassReport&, const std::vector<Vec3d>& t) {
                         g.errors.push_back(map_error(truth.map, moved_map(start.map, t), categories, &region));
                       }),
      categories, region, &g.errors, &g.lanelets);
  const std::vector<Vec3d>& total = keep.d;
  std::vector<VertexFate> fates = tally.fates(total);
  for (size_t v = 0; v < fates.size(); ++v)  // as infer: an undone move is for the map maker to look at
    if (keep.undone[v]) fates[v] = VertexFate::Flagged;
  g.fates = count_fates(start.map, fates, categories);
  // The vertices that were far off and where they ended (horizontal and vertical error together).
  const VertexFrame frames = vertex_frames(start.map, categories);
  const auto before = vertex_errors(truth.map, start.map, frames);
  const VectorMap end = moved_map(start.map, total);
  const auto after = vertex_errors(truth.map, end, vertex_frames(end, categories));
  for (size_t v = 0; v < fates.size(); ++v) {
    if (fates[v] == VertexFate::Untouched || fates[v] == VertexFate::NoData) continue;
    if (tile_of(region, start.map.vertices[v].world) < 0) continue;
    g.refined++;
    g.flagged += fates[v] == VertexFate::Flagged;
    if (!std::isfinite(before[v][0]) || std::hypot(before[v][0], before[v][1]) <= c.far) continue;
    g.far++;
    g.far_ended_near += std::hypot(after[v][0], after[v][1]) <= c.near;
  }
  return g;
}

}  // namespace

MapCheckResult check_map_refinement(const SharedMap& truth, const std::vector<Vec3d>& perturbation,
                                    const PassOptions& options, const RefinePass& refine,
                                    const std::vector<std::string>& categories, const TileSet& region,
                                    const ConfidenceCheck* confidence) {
  MapCheckResult r;
  r.options = options;
  // The confidence check's material: the first pass over the true map (its proposals, which are all
  // errors) and the last pass over the perturbed map (its spreads, judged at the final positions).
  MapRefineReport first, last;
  std::vector<Vec3d> first_d;
  const PassDetail keep = [&](int pass, const SharedMap&, const MapRefineReport& rep, const std::vector<Vec3d>& d) {
    if (pass == 1) first = rep, first_d = d;
    last = rep;
  };
  // The fixed point: the truth in, every pass's map against the truth.
  keep_lanelets(truth.map, truth.map,
                refine_in_passes(
                    truth, options, refine, &r.fixed_passes,
                    [&](const PassReport&, const std::vector<Vec3d>& total) {
                      r.fixed.push_back(map_error(truth.map, moved_map(truth.map, total), categories, &region));
                    },
                    confidence ? keep : PassDetail()),
                categories, region, &r.fixed, &r.fixed_lanelets);
  if (confidence) add_samples(truth.map, moved_map(truth.map, first_d), first, categories, region, &r.samples);
  // The perturbed map: the same passes from the truth moved by the noise.
  const SharedMap perturbed = make_shared_map(moved_map(truth.map, perturbation));
  r.perturbed_input = map_error(truth.map, perturbed.map, categories, &region);
  const std::vector<Vec3d> perturbed_total = refine_in_passes(
      perturbed, options, refine, &r.perturbed_passes,
      [&](const PassReport&, const std::vector<Vec3d>& total) {
        r.perturbed.push_back(map_error(truth.map, moved_map(perturbed.map, total), categories, &region));
      },
      confidence ? keep : PassDetail());
  keep_lanelets(truth.map, perturbed.map, perturbed_total, categories, region, &r.perturbed, &r.perturbed_lanelets);
  if (!confidence) return r;
  add_samples(truth.map, moved_map(perturbed.map, perturbed_total), last, categories, region, &r.final_samples);
  r.checked_confidence = true;
  r.confidence = *confidence;
  const int judged = confidence->given ? -1 : 1;
  if (confidence->given) {
    r.calibration = *confidence->given;
  } else {
    r.calibration = fit_on_even_tiles(r.samples, confidence->binned, "streamline evaluate-map");
    r.fitted = true;
  }
  r.coverage = coverage(r.calibration, r.samples, judged);
  r.final_coverage = coverage(r.calibration, r.final_samples, judged);
  r.gated_fixed = gated_run(truth, truth, options, refine, r.calibration, *confidence, categories, region);
  r.gated_perturbed = gated_run(truth, perturbed, options, refine, r.calibration, *confidence, categories, region);
  return r;
}

namespace {

// Rows by category, a column pair (mean, p95 of the 3-D distance) per stage.
std::string table(const std::vector<std::string>& heads, const std::vector<const MapErrorResult*>& stages) {
  std::string s;
  char b[64];
  std::snprintf(b, sizeof b, "  %-24s %8s", "category", "vertices");
  s += b;
  for (const auto& h : heads) {
    std::snprintf(b, sizeof b, "  %15s", h.c_str());
    s += b;
  }
  s += "\n";
  std::snprintf(b, sizeof b, "  %-24s %8s", "", "");
  s += b;
  for (size_t i = 0; i < heads.size(); ++i) s += "     mean    p95";
  s += "\n";
  const MapErrorResult& first = *stages.front();
  for (size_t row = 0; row < first.rows.size(); ++row) {
    std::snprintf(b, sizeof b, "  %-24s %8lld", first.rows[row].category.c_str(), (long long)first.rows[row].vertices);
    s += b;
    for (const MapErrorResult* st : stages) {
      const Spread& f = row < st->rows.size() ? st->rows[row].full : Spread{};
      std::snprintf(b, sizeof b, "   %6.3f %6.3f", f.mean, f.p95);
      s += b;
    }
    s += "\n";
  }
  return s;
}

// "" where no lanelet had a moved bound.
std::string lanelets_text(const LaneletsKept& k) {
  if (k.checked == 0) return "";
  return "  lanelets: " + std::to_string(k.checked) + " with a moved bound after the last pass, " + std::to_string(k.kept) +
         " kept valid by undoing the moves of their bounds (as infer does; the last pass's figures are after that)\n";
}

}  // namespace

std::string to_text(const MapCheckResult& r) {
  std::string s;
  std::vector<std::string> heads;
  std::vector<const MapErrorResult*> stages;
  for (size_t k = 0; k < r.fixed.size(); ++k) {
    heads.push_back("pass " + std::to_string(k + 1));
    stages.push_back(&r.fixed[k]);
  }
  s += "The true map refined (the fixed point: a correct line should stay put), 3-D distance of its vertices to the "
       "true lines, m:\n";
  if (!stages.empty()) s += table(heads, stages);
  s += to_text(r.fixed_passes, r.options);
  s += lanelets_text(r.fixed_lanelets);
  heads = {"input"};
  stages = {&r.perturbed_input};
  for (size_t k = 0; k < r.perturbed.size(); ++k) {
    heads.push_back("pass " + std::to_string(k + 1));
    stages.push_back(&r.perturbed[k]);
  }
  s += "\nThe perturbed map refined, 3-D distance of its vertices to the true lines, m:\n";
  s += table(heads, stages);
  s += to_text(r.perturbed_passes, r.options);
  s += lanelets_text(r.perturbed_lanelets);
  if (r.perturbed_input.outside > 0)
    s += "(" + std::to_string(r.perturbed_input.outside) + " vertices outside the clouds left out)\n";
  if (!r.checked_confidence) return s;
  int64_t n[2] = {0, 0};
  for (const auto& x : r.samples) n[x.split & 1]++;
  char b[512];
  const bool knots = has_knots(r.calibration);
  s += std::string("\nConfidence: sigma per axis ") +
       (knots ? "read from knots (spread, sigma), one per tenth of the vertices by spread (where a fit has none: "
                "sqrt((a * spread)^2 + b^2))"
              : "= sqrt((a * spread)^2 + b^2)") +
       ", the spread being " +
       (r.confidence.variance_head ? "the sigma of the model's variance head (its views' mean variance)"
                                   : "the disagreement of the model's views") +
       "; samples: what the first pass proposed for the true map's vertices (every proposed shift is an error), " +
       std::to_string(n[0]) + " on even tiles, " + std::to_string(n[1]) + " on odd ones.\n";
  s += r.fitted ? "Fitted on the even tiles' vertices:\n" : "The calibration given (" + r.calibration.note + "):\n";
  for (const auto& [key, f] : r.calibration.fits) {
    std::snprintf(b, sizeof b, "  %-24s across a %.3f b %.4f m; vertical a %.3f b %.4f m\n", key.empty() ? "(all)" : key.c_str(),
                  f[kAcross].a, f[kAcross].b, f[kVertical].a, f[kVertical].b);
    s += b;
    for (int a = 0; a < 2; ++a) {
      if (f[size_t(a)].knots.empty()) continue;
      s += std::string("    knots ") + axis_name(a) + " (spread -> sigma, m):";
      for (const auto& k : f[size_t(a)].knots) {
        std::snprintf(b, sizeof b, " %.4f->%.4f", k[0], k[1]);
        s += b;
      }
      s += "\n";
    }
  }
  const std::string on = r.fitted ? "the odd tiles' vertices (nothing was fitted on them)" : "every vertex";
  s += "Its coverage of the true map's first-pass proposals, on " + on + ":\n" + to_text(r.coverage);
  if (r.fitted) {  // what a fit on the even tiles can promise about its scale
    const std::string pin = scale_spread_text(r.calibration, r.samples, 0);
    if (!pin.empty()) s += "  (the fit: " + pin + ")\n";
  }
  s += "Its coverage of the perturbed map's final positions (after the last pass, ungated), on " + on + ":\n" +
       to_text(r.final_coverage);
  std::snprintf(b, sizeof b, "\nThe gate (a vertex moves across its line, or vertically, only by a shift beyond %.2f sigma; "
                "sigma across above %.3f m after the last pass, or moved more than %.3f m by the last pass: flagged for review):\n",
                r.confidence.gate.k, r.confidence.gate.flag_sigma, r.confidence.gate.unsettled);
  s += b;
  auto gated = [&](const char* what, const GatedRun& g, const MapErrorResult& input) {
    std::vector<std::string> heads{"input"};
    std::vector<const MapErrorResult*> stages{&input};
    for (size_t k = 0; k < g.errors.size(); ++k) {
      heads.push_back("pass " + std::to_string(k + 1));
      stages.push_back(&g.errors[k]);
    }
    std::string o = std::string(what) + ", gated, 3-D distance of its vertices to the true lines, m:\n";
    o += table(heads, stages);
    o += to_text(g.passes, r.options);
    o += lanelets_text(g.lanelets);
    o += to_text(g.fates);
    char c[256];
    std::snprintf(c, sizeof c, "  flagged: %lld of %lld refined vertices (%.1f%%)", (long long)g.flagged, (long long)g.refined,
                  g.refined ? 100.0 * double(g.flagged) / double(g.refined) : 0.0);
    o += c;
    if (g.far > 0) {
      std::snprintf(c, sizeof c, "; of the %lld vertices more than %.0f cm off, %lld (%.1f%%) end within %.0f cm", (long long)g.far,
                    100 * r.confidence.far, (long long)g.far_ended_near, 100.0 * double(g.far_ended_near) / double(g.far),
                    100 * r.confidence.near);
      o += c;
    }
    return o + "\n";
  };
  MapErrorResult zero = r.fixed.empty() ? MapErrorResult{} : r.fixed.front();
  for (auto& row : zero.rows) row.full = Spread{}, row.horizontal = Spread{};
  s += gated("The true map", r.gated_fixed, zero);
  s += gated("The perturbed map", r.gated_perturbed, r.perturbed_input);
  return s;
}

CalibrationFit calibrate_on_true_map(const SharedMap& truth, const RefinePass& refine,
                                     const std::vector<std::string>& categories, const TileSet& region, bool binned,
                                     const std::string& who) {
  CalibrationFit f;
  MapRefineReport first;
  const std::vector<Vec3d> d = refine(truth, 1, &first);
  add_samples(truth.map, moved_map(truth.map, d), first, categories, region, &f.samples);
  f.calibration = fit_on_even_tiles(f.samples, binned, who);
  for (const auto& x : f.samples) (x.split == 0 ? f.fitted_on : f.judged_on)++;
  f.coverage = coverage(f.calibration, f.samples, 1);
  return f;
}

}  // namespace sl
