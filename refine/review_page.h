// review.html: the one page infer --map writes beside its review layer, as a training run writes
// report.html. It holds, for a map maker deciding where to look first:
//  - what the refinement did, per category: vertices moved, left as right, flagged, with no data
//    (the counts infer prints);
//  - a map of every refined line (as given, grey) with each changed vertex drawn as a dot coloured by
//    its uncertainty across the line (sigma, the calibrated one: green sure, red at --flag-sigma and
//    above; by the size of its shift when the run was not gated, which the page says), flagged
//    vertices ringed;
//  - close-ups of the largest changes and the least certain ones, drawn over their points (top view,
//    intensity in grey): the line as given (dashed) and as refined (blue), the vertex ringed.
// Plain HTML with inline SVG: no script, no network, opens from the disk in any browser.
#pragma once
#include <array>
#include <functional>
#include <string>
#include <vector>

#include "formats/maps/map_lines.h"
#include "formats/maps/vector_map.h"
#include "formats/tiles/tile_set.h"
#include "graph/message.h"
#include "refine/confidence.h"

namespace sl {

// The points inside a world xy box, for drawing: x, y (world metres) and intensity in [0, 1].
struct ReviewPoints {
  std::vector<std::array<double, 2>> xy;
  std::vector<float> intensity;
};
using ReviewPointsIn = std::function<ReviewPoints(const BoxXY& world)>;

struct ReviewPageInput {
  const VectorMap* map = nullptr;              // as given
  const std::vector<Vec3d>* d = nullptr;       // the total displacement of every vertex
  const std::vector<VertexFate>* fates = nullptr;
  const GateTally* tally = nullptr;            // passes() == 0: not gated (no sigma)
  std::vector<std::string> categories;         // the refined categories (category_matches)
  GateOptions gate;
  std::string provenance;                      // what made it (the layer's streamline:made_by)
  std::string layer;                           // the review layer's file name, for the page's links
  ReviewPointsIn points;                       // null: close-ups without points
  // Further findings, one line each, listed under the counts: the segments too sparse to follow the
  // points, the lanelets whose bounds' moves were undone (infer's own lines).
  std::vector<std::string> notes;
  int closeups = 4;                            // of each kind: the largest shifts, the largest sigmas
  double window = 5;                           // metres: a close-up's side
};

std::string review_html(const ReviewPageInput& in);

// The points of a cloud (its local frame, world = local + origin) inside a world box, their intensity
// scaled by the window's largest (sensors differ in scale: only the contrast is drawn).
ReviewPoints review_points(const PointCloud& cloud, const BoxXY& world);
// The same from the tiles the box touches, decoded as they are needed (the last few kept).
ReviewPointsIn review_points_from_tiles(const TileSet& tiles);

}  // namespace sl
