// The review layer: what `infer --map` changed and what it could not decide, as a GeoJSON file a map
// maker opens beside the refined map in JOSM or QGIS. The refined map itself stays a clean map.
//
// Per line (map way / feature part) of the wanted categories with a moved or flagged vertex, two
// LineString features: the line as refined ("streamline:state": "refined") and as it was given
// ("given"), with the line's identity and category, its vertices moved / flagged, the largest shift
// and the largest sigma across and vertically (metres), and "streamline:review": "pending" for the
// map maker to set to "accepted" or "rejected". Per flagged vertex a Point feature with its sigma and
// its proposed shift, and a `fixme` saying why (JOSM's validator lists every object with a fixme).
// Coordinates: WGS 84 longitude, latitude, height (RFC 7946) where the map's world frame is a
// projection; otherwise the map's own local frame in metres, said in the collection's
// "streamline:frame" member (JOSM cannot place such a layer; QGIS opens it without a CRS).
//
// Applied back (`streamline apply-review`): the map maker sets "streamline:review" on the refined
// features to "accepted" or "rejected" (JOSM's tag editor, QGIS's attribute table) and the refined
// map's moves are kept only on the accepted lines -- written into the map as given, its bytes
// untouched outside those vertices' numbers, as infer writes.
#pragma once
#include <array>
#include <string>
#include <vector>

#include "formats/maps/vector_map.h"
#include "refine/confidence.h"

namespace sl {

struct ReviewCounts {
  int64_t lines = 0, flagged_vertices = 0;  // line features written (each twice: refined and given)
  int64_t sparse_segments = 0;              // segments too sparse to follow the points
};

// The layer's text: `map` as given, `d` the total displacement of every vertex, `fates` and `tally`
// from the gated passes (GateTally::fates, sigma, shift; an empty tally: no confidence, sigma 0).
// `why` (optional, one per vertex): for a flagged vertex, why it was flagged where the gate did not
// flag it (a move undone to keep a lanelet valid: refine/lanelet_check.h); the gate's own flags say
// theirs (sigma above the flag threshold, or still moving in the last pass).
// `sparse` (optional): the segments the last pass bent away from (MapRefineReport::sparse), each a
// LineString feature as refined ("streamline:state": "sparse") with its bend and a `fixme` asking
// for vertices there.
std::string review_geojson(const VectorMap& map, const std::vector<Vec3d>& d, const std::vector<VertexFate>& fates,
                           const GateTally& tally, const std::vector<std::string>& categories, const GateOptions& gate,
                           const std::string& provenance, ReviewCounts* counts = nullptr,
                           const std::vector<std::string>* why = nullptr, const std::vector<SparseSpan>* sparse = nullptr);

// How the refined lines still "pending" (or with no decision) are applied.
enum class PendingAs { Rejected, Accepted };

struct ApplyReviewReport {
  int64_t accepted_lines = 0, rejected_lines = 0, pending_lines = 0;  // refined features, by their decision
  int64_t kept_vertices = 0;      // moved vertices whose move is kept
  int64_t reverted_vertices = 0;  // moved vertices put back as given
  int64_t conflicts = 0;          // of those, vertices on an accepted and a rejected line (a shared node: put back)
  int64_t unreviewed = 0;         // moved vertices on no refined feature of the layer (applied as pending)
};

// The moves to write into `given` (one per vertex, world metres): the refined map's own moves
// (refined - given; the two maps must be the same map, vertex for vertex and line for line), kept on
// a vertex when a line through it was accepted and none rejected (a node shared by an accepted and a
// rejected line stays as given), and on one whose lines are all pending as `pending` says. The layer is read from `layer_path`; its refined features are matched to the
// map's lines by their "id", "member" and "part" (numbers, or the strings JOSM writes them as), the
// geometry is not read (edit a line's shape in the map itself). Throws sl::Error naming the file and
// the feature for: not JSON or not a FeatureCollection, a "streamline:review" other than accepted /
// rejected / pending, a line the map does not have; and naming both maps when they differ.
std::vector<Vec3d> reviewed_moves(const VectorMap& given, const VectorMap& refined, const std::string& layer_path,
                                  PendingAs pending, ApplyReviewReport* report = nullptr);

std::string to_text(const ApplyReviewReport& r);

}  // namespace sl
