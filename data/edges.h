// The road's edges and markings as a real map draws them (gen-data --edges realistic): the catalogue
// of kinds, their dimensions and materials, and one draw of a road's layout from a seed. The ray
// caster (data/gen.cpp) builds its surface and materials from a RoadLayout; the lines it writes carry
// Lanelet2's names (type, or type:subtype), as in Lanelet2's example map and Autoware's maps:
//   road_border             the pavement's end at grade or with a step <= 1 cm: asphalt to gravel, grass,
//                           a paved sidewalk, or a concrete gutter strip (at grade) then grass;
//                           the evidence is the change of intensity and texture
//   curbstone:high          a 10-16 cm step with its face, a sidewalk behind it (sometimes a gutter in front)
//   curbstone:low           a 2-6 cm step: a mountable curb along a whole side, or a high curb lowered at a
//                           driveway or crossing (4-8 m; the curb line is cut there into its own way)
//   line_thin:<subtype>     10-15 cm paint; line_thick:<subtype> 25-35 cm. Subtypes: solid; dashed in
//                           several rhythms (on/off 3/6, 6/12, 3/3, 4/8, 1.5/3 m); solid_solid (two
//                           stripes); dashed_solid and solid_dashed (the first named stripe on the left,
//                           looking along the line, as Lanelet2 reads them)
//   stop_line               30-50 cm paint across one or two lanes of one direction (a short line, ~3-7 m)
// A double line's polyline is the centre between its stripes. Paint (the map kind) fades, wears through in
// patches and is partly covered (patched asphalt, dirt: 0-2 stretches of 0.5-4 m with no paint).
// Every number is drawn from the generator's RNG, so a layout depends only on the scene's seed.
#pragma once
#include <array>
#include <string>
#include <vector>

#include "geometry/rng.h"

namespace sl {

// What lies beyond a road edge, for beyond_width m (grass further out); intensity and roughness in
// data/gen.cpp. Gutter: a concrete strip at the road's level.
enum class Beyond { Sidewalk, Grass, Gravel, Gutter };

struct RoadEdge {
  std::string type, subtype;       // "road_border" / "", "curbstone" / "high" or "low"
  double u = 0;                    // |u| of the edge line: where the pavement (or the gutter) ends, m
  double height = 0;               // the step up at the edge, m (road_border: 0-0.01)
  std::vector<std::array<double, 2>> lowered;  // s intervals where a curbstone:high is lowered
  double lowered_height = 0;       // the step there, m (2-4 cm)
  double gutter = 0;               // curbs: a concrete gutter strip at grade in front of the curb, m (0: none)
  Beyond beyond = Beyond::Sidewalk;  // the surface behind the edge, for beyond_width m, grass further out
  double beyond_width = 3;
  double height_at(double s) const;  // the step at s
};

// One painted stripe of a marking: centre at the marking's u + du.
struct Stripe {
  double du = 0, half_width = 0.075;
  bool dashed = false;
  double on = 3, period = 9, phase = 0;  // dashes: painted where (s + phase) mod period < on
  bool painted(double s) const;
};

struct MarkingLine {
  std::string type, subtype;  // "line_thin" / "dashed", ...
  double u = 0;               // the polyline's lateral offset (the centre of all its stripes)
  std::vector<Stripe> stripes;
  bool lane_bound = true;     // bounds lanes (every longitudinal marking)
};

struct StopLine {
  double s = 0, u0 = 0, u1 = 0, half_width = 0.2;  // across the road at s, from u0 to u1 (u0 < u1)
};

struct RoadLayout {
  RoadEdge edge[2];                   // 0: right (u < 0), 1: left (u > 0)
  std::vector<MarkingLine> markings;  // right to left
  std::vector<StopLine> stops;
};

// A road of `lanes` lanes of width lane_w (its lane bounds at u = -half + k lane_w, half = lanes lane_w / 2),
// annotated over s in [-line_half_length, line_half_length].
RoadLayout draw_road_layout(Rng& rng, int lanes, double lane_w, double line_half_length);

// The category of a line of the layout: "type:subtype", or "type" where there is no subtype.
std::string lanelet2_category(const std::string& type, const std::string& subtype);

}  // namespace sl
