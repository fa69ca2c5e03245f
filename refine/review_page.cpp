#include "refine/review_page.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>

#include "formats/maps/categories.h"
#include "formats/clouds/formats.h"
#include "formats/clouds/origin.h"
#include "graph/error.h"
#include "report/charts.h"

namespace sl {

namespace {

using report::html_escape;

std::string num(double v, int digits) {
  char b[48];
  std::snprintf(b, sizeof b, "%.*f", digits, v);
  return b;
}

// t in [0, 1]: green (sure, small) through yellow to red (unsure, large).
std::string colour(double t) {
  t = std::clamp(std::isfinite(t) ? t : 1.0, 0.0, 1.0);
  const double stops[3][3] = {{0x1a, 0x98, 0x50}, {0xfe, 0xe0, 0x8b}, {0xd7, 0x30, 0x27}};
  const int i = t < 0.5 ? 0 : 1;
  const double u = t < 0.5 ? t / 0.5 : (t - 0.5) / 0.5;
  char b[8];
  std::snprintf(b, sizeof b, "#%02x%02x%02x", int(std::lround(stops[i][0] + u * (stops[i + 1][0] - stops[i][0]))),
                int(std::lround(stops[i][1] + u * (stops[i + 1][1] - stops[i][1]))),
                int(std::lround(stops[i][2] + u * (stops[i + 1][2] - stops[i][2]))));
  return b;
}

double norm3(const Vec3d& v) { return std::sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]); }

// World xy -> SVG pixels: x to the right, north up.
struct View {
  double x0 = 0, y1 = 0, scale = 1;
  double px(double x) const { return (x - x0) * scale; }
  double py(double y) const { return (y1 - y) * scale; }
};

std::string polyline(const View& v, const std::vector<Vec3d>& pts, const std::string& attrs) {
  std::string o = "<polyline " + attrs + " points=\"";
  for (size_t k = 0; k < pts.size(); ++k) o += (k ? " " : "") + num(v.px(pts[k][0]), 1) + "," + num(v.py(pts[k][1]), 1);
  return o + "\"/>";
}

}  // namespace

std::string review_html(const ReviewPageInput& in) {
  if (!in.map || !in.d || !in.fates || !in.tally) throw Error("review page: missing input");
  const VectorMap& map = *in.map;
  const std::vector<Vec3d>& d = *in.d;
  const std::vector<VertexFate>& fates = *in.fates;
  const size_t nv = map.vertices.size();
  if (d.size() != nv || fates.size() != nv) throw Error("review page: displacements or fates do not match the map's vertices");
  const bool gated = in.tally->passes() > 0;
  auto sigma = [&](uint32_t v) { return gated ? in.tally->sigma()[v][0] : 0.0; };
  // The dot's colour: sigma across against --flag-sigma (gated), else the shift against 0.25 m.
  const double scale_top = gated ? std::max(in.gate.flag_sigma, 1e-6) : 0.25;
  auto dot_value = [&](uint32_t v) { return (gated ? sigma(v) : norm3(d[v])) / scale_top; };

  // The refined lines (a wanted category, a vertex the refinement reached) and the changed vertices.
  std::vector<size_t> lines;
  std::vector<std::vector<size_t>> lines_of(nv);
  for (size_t l = 0; l < map.lines.size(); ++l) {
    const MapLine& line = map.lines[l];
    if (!category_matches(line.category, in.categories)) continue;
    bool reached = false;
    for (uint32_t v : line.vertex) reached |= fates[v] != VertexFate::Untouched;
    if (!reached) continue;
    lines.push_back(l);
    for (uint32_t v : line.vertex) lines_of[v].push_back(l);
  }
  std::vector<uint32_t> changed;
  for (uint32_t v = 0; v < nv; ++v)
    if (!lines_of[v].empty() && (fates[v] == VertexFate::Moved || fates[v] == VertexFate::Flagged)) changed.push_back(v);

  std::string o =
      "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>streamline review: " + html_escape(map.path) +
      "</title><style>body{font-family:sans-serif;margin:24px;color:#222;max-width:960px}"
      "table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}"
      "th:first-child,td:first-child{text-align:left}figure{margin:0}figcaption{font-size:12px;color:#444;max-width:280px}"
      ".closeups{display:flex;flex-wrap:wrap;gap:12px}svg{border:1px solid #ddd;background:#fff}"
      "svg text{font-size:11px;fill:#333}.note{color:#555;font-size:13px}</style></head><body>";
  o += "<h1>Review: " + html_escape(map.path) + "</h1>";
  o += "<p class=\"note\">Made by " + html_escape(in.provenance) + ". The changes, line by line, are in the review layer <a href=\"" +
       html_escape(in.layer) + "\">" + html_escape(in.layer) + "</a> (open it beside the refined map in JOSM or QGIS; " +
       "<code>streamline apply-review</code> applies your decisions).</p>";
  o += std::string("<p class=\"note\">") +
       (gated ? "Gated: a vertex moved only where its shift was beyond " + num(in.gate.k, 1) +
                    " sigma; the colours are its calibrated uncertainty across the line, green sure to red at " +
                    num(in.gate.flag_sigma, 3) + " m (flagged) and above."
              : std::string("Not gated (no calibration for this checkpoint, or --no-gate): every vertex moved by the "
                            "model; the colours are the size of each move, green 0 to red 0.25 m and above.")) +
       "</p>";

  // The counts.
  const FateCounts counts = count_fates(map, fates, in.categories);
  o += "<h2>What was done</h2><table id=\"counts\"><tr><th>category</th><th>moved</th><th>left as right</th><th>flagged</th>"
       "<th>no data</th></tr>";
  const std::string all_key = "\x7f" "all";  // count_fates' row over every category (a vertex once)
  std::array<int64_t, 5> total{};
  for (const auto& [cat, c] : counts.by) {
    if (cat == all_key) {
      total = c;
      continue;
    }
    o += "<tr><td>" + html_escape(cat.empty() ? "(none)" : cat) + "</td>";
    for (VertexFate f : {VertexFate::Moved, VertexFate::Left, VertexFate::Flagged, VertexFate::NoData})
      o += "<td>" + std::to_string(c[size_t(f)]) + "</td>";
    o += "</tr>";
  }
  o += "<tr><th>all</th>";
  for (VertexFate f : {VertexFate::Moved, VertexFate::Left, VertexFate::Flagged, VertexFate::NoData})
    o += "<th>" + std::to_string(total[size_t(f)]) + "</th>";
  o += "</tr></table>";
  if (!in.notes.empty()) {
    o += "<h2>Also</h2><ul id=\"notes\">";
    for (const std::string& n : in.notes) o += "<li>" + html_escape(n) + "</li>";
    o += "</ul>";
  }

  // The map of the changes.
  o += "<h2>Where</h2>";
  if (lines.empty()) {
    o += "<p>No line of the refined categories was reached.</p>";
  } else {
    double x0 = 1e300, x1 = -1e300, y0 = 1e300, y1 = -1e300;
    for (size_t l : lines)
      for (const Vec3d& p : map.lines[l].points) x0 = std::min(x0, p[0]), x1 = std::max(x1, p[0]), y0 = std::min(y0, p[1]), y1 = std::max(y1, p[1]);
    const double pad = 0.03 * std::max({x1 - x0, y1 - y0, 1.0});
    x0 -= pad, x1 += pad, y0 -= pad, y1 += pad;
    const int W = 900;
    View v{x0, y1, std::min(W / (x1 - x0), 700 / (y1 - y0))};
    const int w = int(std::ceil(v.px(x1))), h = int(std::ceil(v.py(y0)));
    o += "<svg id=\"review-map\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" + std::to_string(w) + "\" height=\"" +
         std::to_string(h + 34) + "\">";
    for (size_t l : lines) o += polyline(v, map.lines[l].points, "fill=\"none\" stroke=\"#aaa\" stroke-width=\"1.2\"");
    for (uint32_t u : changed) {
      const Vec3d& p = map.vertices[u].world;
      o += "<circle class=\"change\" cx=\"" + num(v.px(p[0]), 1) + "\" cy=\"" + num(v.py(p[1]), 1) + "\" r=\"3\" fill=\"" +
           colour(dot_value(u)) + "\"" +
           (fates[u] == VertexFate::Flagged ? " stroke=\"#d73027\" stroke-width=\"1.5\"" : std::string()) + "/>";
    }
    // The colour scale and a scale bar.
    for (int i = 0; i < 50; ++i)
      o += "<rect x=\"" + std::to_string(10 + 4 * i) + "\" y=\"" + std::to_string(h + 8) + "\" width=\"4\" height=\"10\" fill=\"" +
           colour(i / 49.0) + "\"/>";
    o += "<text x=\"10\" y=\"" + std::to_string(h + 30) + "\">0</text><text x=\"200\" y=\"" + std::to_string(h + 30) + "\">" +
         num(scale_top, 3) + " m " + (gated ? "sigma across" : "move") + "</text>";
    const double bar = std::pow(10.0, std::floor(std::log10(std::max(0.2 * (x1 - x0), 1e-3))));
    o += "<line x1=\"" + std::to_string(w - 20 - int(bar * v.scale)) + "\" x2=\"" + std::to_string(w - 20) + "\" y1=\"" +
         std::to_string(h + 14) + "\" y2=\"" + std::to_string(h + 14) + "\" stroke=\"#222\" stroke-width=\"2\"/><text x=\"" +
         std::to_string(w - 20 - int(bar * v.scale)) + "\" y=\"" + std::to_string(h + 30) + "\">" + num(bar, bar < 1 ? 1 : 0) +
         " m</text></svg>";
    o += "<p class=\"note\">" + std::to_string(changed.size()) + " changed or flagged vertices on " +
         std::to_string(lines.size()) + " refined line(s); grey: the lines as given.</p>";
  }

  // Close-ups: the largest shifts, then (gated) the largest sigmas, none within a window of another.
  std::vector<std::pair<uint32_t, std::string>> picks;
  auto pick = [&](std::vector<uint32_t> order, auto key, const std::string& why) {
    std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return key(a) > key(b); });
    int n = 0;
    for (uint32_t u : order) {
      if (n >= in.closeups) break;
      bool near = false;
      for (const auto& [q, w] : picks)
        near |= std::hypot(map.vertices[u].world[0] - map.vertices[q].world[0], map.vertices[u].world[1] - map.vertices[q].world[1]) <
                in.window;
      if (near) continue;
      picks.push_back({u, why});
      ++n;
    }
  };
  pick(changed, [&](uint32_t u) { return norm3(d[u]); }, "a largest change");
  if (gated) pick(changed, [&](uint32_t u) { return sigma(u); }, "a least certain change");
  o += "<h2>The largest and the least certain changes, over their points</h2>";
  if (picks.empty()) o += "<p>No vertex changed.</p>";
  o += "<div class=\"closeups\">";
  const int S = 280;
  for (size_t i = 0; i < picks.size(); ++i) {
    const uint32_t u = picks[i].first;
    const Vec3d& c = map.vertices[u].world;
    const double half = 0.5 * in.window;
    View v{c[0] - half, c[1] + half, S / in.window};
    std::string s = "<svg id=\"closeup-" + std::to_string(i) + "\" class=\"closeup\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" +
                    std::to_string(S) + "\" height=\"" + std::to_string(S) + "\" viewBox=\"0 0 " + std::to_string(S) + " " +
                    std::to_string(S) + "\">";
    int64_t drawn = 0;
    if (in.points) {
      BoxXY box;
      box.x0 = c[0] - half, box.x1 = c[0] + half, box.y0 = c[1] - half, box.y1 = c[1] + half;
      const ReviewPoints pts = in.points(box);
      const size_t step = std::max<size_t>(1, pts.xy.size() / 4000);
      for (size_t k = 0; k < pts.xy.size(); k += step) {
        const double g = std::clamp(1.0 - 0.85 * double(k < pts.intensity.size() ? pts.intensity[k] : 0.3f), 0.0, 1.0);
        const int gray = int(std::lround(255 * g));
        char fill[8];
        std::snprintf(fill, sizeof fill, "#%02x%02x%02x", gray, gray, gray);
        s += "<rect x=\"" + num(v.px(pts.xy[k][0]) - 1, 1) + "\" y=\"" + num(v.py(pts.xy[k][1]) - 1, 1) +
             "\" width=\"2\" height=\"2\" fill=\"" + fill + "\"/>";
        ++drawn;
      }
    }
    std::string label;
    for (size_t l : lines_of[u]) {
      const MapLine& line = map.lines[l];
      std::vector<Vec3d> after;
      for (uint32_t q : line.vertex) after.push_back({map.vertices[q].world[0] + d[q][0], map.vertices[q].world[1] + d[q][1], 0});
      s += polyline(v, line.points, "class=\"given\" fill=\"none\" stroke=\"#555\" stroke-width=\"1.5\" stroke-dasharray=\"5,4\"");
      s += polyline(v, after, "class=\"refined\" fill=\"none\" stroke=\"#1f5fa8\" stroke-width=\"2.5\"");
      label += (label.empty() ? "" : ", ") + map.label(l);
    }
    s += "<circle cx=\"" + num(v.px(c[0] + d[u][0]), 1) + "\" cy=\"" + num(v.py(c[1] + d[u][1]), 1) +
         "\" r=\"7\" fill=\"none\" stroke=\"#d73027\" stroke-width=\"2\"/>";
    s += "<line x1=\"10\" x2=\"" + num(10 + S / in.window, 1) + "\" y1=\"" + std::to_string(S - 10) + "\" y2=\"" +
         std::to_string(S - 10) + "\" stroke=\"#222\" stroke-width=\"2\"/><text x=\"10\" y=\"" + std::to_string(S - 14) +
         "\">1 m</text></svg>";
    std::string caption = html_escape(label) + ": " + picks[i].second + ", moved " + num(norm3(d[u]), 3) + " m";
    if (gated)
      caption += ", sigma across " + num(sigma(u), 3) + " m, vertical " + num(in.tally->sigma()[u][1], 3) +
                 " m (proposed shift across " + num(in.tally->shift()[u][0], 3) + " m)";
    caption += "; " + std::string(fate_name(fates[u])) + "; " + std::to_string(drawn) + " points drawn" +
               (in.points ? "" : " (none given)");
    o += "<figure>" + s + "<figcaption>" + caption + "</figcaption></figure>";
  }
  o += "</div></body></html>\n";
  return o;
}

ReviewPoints review_points(const PointCloud& cloud, const BoxXY& world) {
  ReviewPoints r;
  const int ix = cloud.field_index("x"), iy = cloud.field_index("y"), ii = cloud.field_index("intensity");
  if (ix < 0 || iy < 0) return r;
  const auto& X = cloud.columns[size_t(ix)];
  const auto& Y = cloud.columns[size_t(iy)];
  float top = 0;
  for (size_t k = 0; k < cloud.size(); ++k) {
    const double x = double(X[k]) + cloud.origin[0], y = double(Y[k]) + cloud.origin[1];
    if (x < world.x0 || x > world.x1 || y < world.y0 || y > world.y1) continue;
    r.xy.push_back({x, y});
    const float i = ii >= 0 ? cloud.columns[size_t(ii)][k] : 0.3f;
    r.intensity.push_back(std::isfinite(i) ? i : 0.f);
    top = std::max(top, r.intensity.back());
  }
  if (top > 0)
    for (float& i : r.intensity) i = std::max(0.f, i / top);
  return r;
}

ReviewPointsIn review_points_from_tiles(const TileSet& tiles) {
  auto cache = std::make_shared<std::map<uint32_t, std::shared_ptr<const PointCloud>>>();
  return [&tiles, cache](const BoxXY& world) {
    ReviewPoints all;
    for (uint32_t t : tiles.touching(world)) {
      auto it = cache->find(t);
      if (it == cache->end()) {
        if (cache->size() >= 4) cache->erase(cache->begin());
        DecodeInfo info;
        auto c = std::make_shared<const PointCloud>(
            tiles.format->decode(tiles.tiles[t].path, DecodeOptions{true, OriginPolicy::at(tiles.origin)}, &info));
        it = cache->emplace(t, std::move(c)).first;
      }
      ReviewPoints one = review_points(*it->second, world);
      all.xy.insert(all.xy.end(), one.xy.begin(), one.xy.end());
      // Tiles of one map share a sensor: each tile's own scale is close enough for the contrast.
      all.intensity.insert(all.intensity.end(), one.intensity.begin(), one.intensity.end());
    }
    return all;
  };
}

}  // namespace sl
