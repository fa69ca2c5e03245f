#include "data/edges.h"

#include <algorithm>
#include <cmath>

namespace sl {
namespace {

// Dash rhythms (on, off), m: German and US practice for lane lines, a shorter one at merges.
constexpr double kRhythms[][2] = {{3, 6}, {6, 12}, {3, 3}, {4, 8}, {1.5, 3}};

Stripe stripe(Rng& rng, double du, double half_width, bool dashed) {
  Stripe s;
  s.du = du, s.half_width = half_width, s.dashed = dashed;
  if (dashed) {
    const auto& r = kRhythms[rng.below(sizeof kRhythms / sizeof kRhythms[0])];
    s.on = r[0], s.period = r[0] + r[1], s.phase = rng.uniform(0, s.period);
  }
  return s;
}

double thin_half_width(Rng& rng) { return rng.uniform(0.05, 0.075); }    // 10-15 cm
double thick_half_width(Rng& rng) { return rng.uniform(0.125, 0.175); }  // 25-35 cm

// A marking of `type` ("line_thin" / "line_thick") and `subtype` at u.
MarkingLine marking(Rng& rng, const std::string& type, const std::string& subtype, double u) {
  MarkingLine m;
  m.type = type, m.subtype = subtype, m.u = u;
  const double hw = type == "line_thick" ? thick_half_width(rng) : thin_half_width(rng);
  if (subtype == "solid" || subtype == "dashed") {
    m.stripes.push_back(stripe(rng, 0, hw, subtype == "dashed"));
  } else {  // two stripes, a gap of 10-15 cm between them; the first named is on the left (+u)
    const double du = rng.uniform(0.10, 0.15) / 2 + hw;
    m.stripes.push_back(stripe(rng, du, hw, subtype == "dashed_solid"));
    m.stripes.push_back(stripe(rng, -du, hw, subtype == "solid_dashed"));
  }
  return m;
}

// A lane line between two lanes.
MarkingLine separator(Rng& rng, double u) {
  const double r = rng.uniform();
  if (r < 0.45) return marking(rng, "line_thin", "dashed", u);
  if (r < 0.55) return marking(rng, "line_thick", "dashed", u);
  if (r < 0.65) return marking(rng, "line_thin", "solid", u);
  if (r < 0.83) return marking(rng, "line_thin", "solid_solid", u);
  if (r < 0.92) return marking(rng, "line_thin", "dashed_solid", u);
  return marking(rng, "line_thin", "solid_dashed", u);
}

RoadEdge edge(Rng& rng, double half, bool edge_line, double line_half_length) {
  RoadEdge e;
  const double r = rng.uniform();
  // Room for the edge line's paint (<= 17.5 cm either side of u = half) before the edge.
  const double inset = edge_line ? rng.uniform(0.25, 0.6) : rng.uniform(0.05, 0.3);
  if (r < 0.4) {
    e.type = "road_border";
    e.height = rng.uniform() < 0.5 ? 0.0 : rng.uniform(0.003, 0.01);
    const double b = rng.uniform();
    e.beyond = b < 0.35 ? Beyond::Gravel : b < 0.7 ? Beyond::Grass : b < 0.85 ? Beyond::Sidewalk : Beyond::Gutter;
    e.beyond_width = e.beyond == Beyond::Gutter ? rng.uniform(0.3, 0.6) : rng.uniform(1.5, 4);
    e.u = half + inset;
  } else if (r < 0.7) {
    e.type = "curbstone", e.subtype = "high";
    e.height = rng.uniform(0.10, 0.16);
    e.gutter = rng.uniform() < 0.4 ? rng.uniform(0.3, 0.5) : 0.0;
    e.u = half + e.gutter + inset;
    e.beyond = Beyond::Sidewalk, e.beyond_width = rng.uniform(2, 4);
    // Driveways and crossings: the curb lowered to 2-4 cm over 4-8 m, none overlapping, within the
    // annotated stretch (>= 3 m from its ends, so the high pieces either side have length).
    const int n = int(rng.below(3));
    e.lowered_height = rng.uniform(0.02, 0.04);
    for (int k = 0; k < n; ++k) {
      const double len = rng.uniform(4, 8), c = rng.uniform(-line_half_length + 3 + len / 2, line_half_length - 3 - len / 2);
      const std::array<double, 2> iv{c - len / 2, c + len / 2};
      bool clear = true;
      for (const auto& o : e.lowered) clear = clear && (iv[1] + 3 < o[0] || o[1] + 3 < iv[0]);
      if (clear) e.lowered.push_back(iv);
    }
    std::sort(e.lowered.begin(), e.lowered.end());
  } else {
    e.type = "curbstone", e.subtype = "low";
    e.height = rng.uniform(0.02, 0.06);
    e.u = half + inset;
    e.beyond = rng.uniform() < 0.6 ? Beyond::Sidewalk : Beyond::Grass, e.beyond_width = rng.uniform(1.5, 4);
  }
  return e;
}

}  // namespace

double RoadEdge::height_at(double s) const {
  for (const auto& iv : lowered)
    if (s >= iv[0] && s <= iv[1]) return lowered_height;
  return height;
}

bool Stripe::painted(double s) const {
  if (!dashed) return true;
  double ph = std::fmod(s + phase, period);
  if (ph < 0) ph += period;
  return ph < on;
}

std::string lanelet2_category(const std::string& type, const std::string& subtype) {
  return subtype.empty() ? type : type + ":" + subtype;
}

RoadLayout draw_road_layout(Rng& rng, int lanes, double lane_w, double line_half_length) {
  RoadLayout out;
  const double half = lanes * lane_w / 2;
  // Edge lines: most roads have them (thick on fast roads), rural ones often none.
  bool edge_line[2];
  for (int side = 0; side < 2; ++side) edge_line[side] = rng.uniform() < 0.75;
  for (int k = 0; k <= lanes; ++k) {
    const double u = -half + k * lane_w;
    if (k == 0 || k == lanes) {
      if (!edge_line[k == 0 ? 0 : 1]) continue;
      out.markings.push_back(marking(rng, rng.uniform() < 0.4 ? "line_thick" : "line_thin", "solid", u));
    } else {
      out.markings.push_back(separator(rng, u));
    }
  }
  for (int side = 0; side < 2; ++side) out.edge[side] = edge(rng, half, edge_line[side], line_half_length);
  // A stop line across the lanes of one direction (u < 0), from the edge line to the centre line.
  if (rng.uniform() < 0.6) {
    StopLine st;
    const int n = std::max(1, lanes / 2);
    st.s = rng.uniform(-line_half_length + 5, line_half_length - 5);
    st.u0 = -half + 0.1, st.u1 = -half + n * lane_w - 0.1;
    st.half_width = rng.uniform(0.15, 0.25);
    out.stops.push_back(st);
  }
  return out;
}

}  // namespace sl
