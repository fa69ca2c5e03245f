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
#pragma once
#include <array>
#include <string>
#include <vector>

#include "formats/maps/vector_map.h"
#include "refine/confidence.h"

namespace sl {

struct ReviewCounts {
  int64_t lines = 0, flagged_vertices = 0;  // line features written (each twice: refined and given)
};

// The layer's text: `map` as given, `d` the total displacement of every vertex, `fates` and `tally`
// from the gated passes (GateTally::fates, sigma, shift; an empty tally: no confidence, sigma 0).
std::string review_geojson(const VectorMap& map, const std::vector<Vec3d>& d, const std::vector<VertexFate>& fates,
                           const GateTally& tally, const std::vector<std::string>& categories, const GateOptions& gate,
                           const std::string& provenance, ReviewCounts* counts = nullptr);

}  // namespace sl
