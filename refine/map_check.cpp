#include "refine/map_check.h"

#include <cstdio>

#include "graph/error.h"

namespace sl {

MapCheckResult check_map_refinement(const SharedMap& truth, const std::vector<Vec3d>& perturbation,
                                    const PassOptions& options, const RefinePass& refine,
                                    const std::vector<std::string>& categories, const TileSet& region) {
  MapCheckResult r;
  r.options = options;
  // The fixed point: the truth in, every pass's map against the truth.
  refine_in_passes(truth, options, refine, &r.fixed_passes, [&](const PassReport&, const std::vector<Vec3d>& total) {
    r.fixed.push_back(map_error(truth.map, moved_map(truth.map, total), categories, &region));
  });
  // The perturbed map: the same passes from the truth moved by the noise.
  const SharedMap perturbed = make_shared_map(moved_map(truth.map, perturbation));
  r.perturbed_input = map_error(truth.map, perturbed.map, categories, &region);
  refine_in_passes(perturbed, options, refine, &r.perturbed_passes, [&](const PassReport&, const std::vector<Vec3d>& total) {
    r.perturbed.push_back(map_error(truth.map, moved_map(perturbed.map, total), categories, &region));
  });
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
  heads = {"input"};
  stages = {&r.perturbed_input};
  for (size_t k = 0; k < r.perturbed.size(); ++k) {
    heads.push_back("pass " + std::to_string(k + 1));
    stages.push_back(&r.perturbed[k]);
  }
  s += "\nThe perturbed map refined, 3-D distance of its vertices to the true lines, m:\n";
  s += table(heads, stages);
  s += to_text(r.perturbed_passes, r.options);
  if (r.perturbed_input.outside > 0)
    s += "(" + std::to_string(r.perturbed_input.outside) + " vertices outside the clouds left out)\n";
  return s;
}

}  // namespace sl
