// Line categories: Lanelet2's names ("type" or "type:subtype": road_border, curbstone:high,
// curbstone:low, line_thin:dashed, line_thick:solid, stop_line, ...) and the generator's first names,
// which stay valid as aliases in data (old lines JSON files, checkpoints) and in filters (pipelines'
// "categories", infer --map --categories):
//   lane_marking  = the longitudinal painted lines, line_thin and line_thick (as data: line_thin,
//                   whose subtype the old files did not record)
//   curb          = curbstone, every subtype (as data: curbstone:high, all the old generator drew)
#pragma once
#include <string>
#include <vector>

namespace sl {

// A category in Lanelet2's names: "curb" -> "curbstone:high", "lane_marking" -> "line_thin"; any other
// unchanged.
std::string canonical_category(const std::string& category);

// What a filter entry stands for in Lanelet2's names: "lane_marking" -> {line_thin, line_thick},
// "curb" -> {curbstone}; any other entry itself.
std::vector<std::string> category_filter_entries(const std::string& entry);

// Lanelet2's line types that mark nothing in the points: `virtual` (a lane boundary with no physical
// edge, mostly in intersections), and the ways that place a traffic sign or light (`traffic_sign`,
// `traffic_light`, Autoware's `light_bulbs`). Any subtype of them.
bool non_physical_category(const std::string& category);

// Category filter: an entry "line_thin" matches "line_thin" and every "line_thin:<subtype>"; an
// entry "line_thin:solid" matches only that. Aliases on either side are resolved first (so "curb"
// selects curbstone:low, and "curbstone:high" selects an old file's "curb"). Empty `wanted` matches
// every line with a physical edge: every category but the non-physical ones (which a filter that
// names them still selects), so a map's virtual lines are never refined, perturbed or trained on
// unless asked for. (read_lines_json alone keeps every line when given no filter: a lines file is
// written back whole by infer --lines.)
bool category_matches(const std::string& category, const std::vector<std::string>& wanted);

}  // namespace sl
