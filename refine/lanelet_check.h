// Moved lanelets stay valid. A lanelet is the lane between its left and right bound (Lanelet2: a
// relation of type lanelet); a refinement moves the bounds' vertices a few centimetres each, which
// is harmless where the lane is 3 m wide and not where the bounds meet (a taper, a merge, the point
// of a gore area) or where a bound's vertices lie closer together than the moves (a tight curve
// drawn densely). There a move can make a bound cross itself, the two bounds cross each other, or the
// left bound end up on the right: a map Lanelet2's routing and Autoware's planners refuse or
// misread. Such moves are undone before the map is written, and said.
//
// Checked in xy on each lanelet of the map (VectorMap::lanelets) at its given and its moved
// positions; only what the moves break is acted on (a lanelet already invalid as given is named and
// left as the refinement moved it -- its bounds were never in order to keep):
//   - a bound crosses itself (two of its segments that share no node cross);
//   - the two bounds cross (a segment of one crosses a segment of the other; touching, as bounds
//     that meet at a shared node of a taper do, is not crossing);
//   - left and right swapped (the ring left bound forward, right bound back changes its orientation;
//     the right bound is taken reversed when it is drawn against the left's direction, as Lanelet2
//     inverts such a bound).
// A lanelet the moves break has the moves of all its bounds' vertices undone, and the check runs
// again (a bound is shared with the next lanelet) until no lanelet is broken; at worst every guarded
// bound is as given, which was valid.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "formats/maps/vector_map.h"

namespace sl {

// What is wrong with the lanelet's bounds at the vertex positions `pos` (world metres, one per map
// vertex): "" when nothing, else e.g. "its left bound (way 12) crosses its right bound (way 13)".
std::string lanelet_problem(const VectorMap& map, const MapLanelet& lanelet, const std::vector<Vec3d>& pos);

struct LaneletKeep {
  std::vector<Vec3d> d;            // the displacements, with the undone moves zeroed
  std::vector<uint8_t> undone;     // per vertex: 1 where a move was undone to keep a lanelet valid
  // Per vertex, for the undone ones: why ("kept as given: the moves made lanelet 300 invalid (...)").
  std::vector<std::string> why;
  int64_t checked = 0;             // lanelets with a moved bound vertex
  int64_t kept = 0;                // of those, lanelets whose bounds' moves were undone
  std::vector<std::string> notes;  // one line per kept lanelet and per lanelet invalid as given
};

// `d` (one displacement per vertex of `map`) with the moves that break a lanelet undone (above).
LaneletKeep keep_lanelets_valid(const VectorMap& map, std::vector<Vec3d> d);

// What infer, apply-review and evaluate-map print: "  lanelets: N with a moved bound, K kept valid by
// undoing the moves of their bounds" and the first `max_notes` notes, one a line; "" when no lanelet
// had a moved bound.
std::string to_text(const LaneletKeep& k, size_t max_notes = 20);

}  // namespace sl
