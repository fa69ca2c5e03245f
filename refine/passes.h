// Cascade refinement: inference in passes. The model corrects a large offset in one pass and
// leaves a few centimetres; run again on its own output, the crop, the grouping and the line it
// reads all sit on the better line, and the rest shrinks. A map is refined, moved by what that
// pass proposed, and refined again, until `passes` passes have run or a pass's moves average at
// most `tolerance` (the moves have stopped: what is left is the model's own scatter, which further
// passes would only accumulate). The total displacement is the sum of the passes'.
//
// The defaults, measured (bench/results/learning_map.md, "Passes"): with the own-data pipeline's
// model a perturbed map's error falls over 4-5 passes while the moves of a true map fall under
// 1 cm after the second, so both stop where they should: a true map after 2 passes, a perturbed one
// after 5. The largest move never settles (a few pieces keep moving several cm), so the stop is on
// the mean.
//
// Per stretch of line, the moves must shrink: a converging line's moves fall pass by pass, while
// one the model pushes the same way every pass (a curb it cannot see, drifting off) or back and
// forth keeps moving as far as before. Each line is cut into stretches of kShrinkStretch metres
// along it; a stretch whose mean move in a pass (the mean length of its vertices' moves, one left
// in place counting 0) is more than `shrink` times its last kept mean is held where the passes
// before put it: its vertices move no more (their later proposals are dropped). Without this a
// map's mean could still fall while some lines diverged pass after pass. Per vertex the rule held
// too much (the model's scatter makes single vertices' moves grow while their line still
// converges), and so did the length of the stretch's mean move vector
// (bench/results/learning_map.md, "Holding what stopped converging").
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "formats/maps/map_lines.h"
#include "formats/maps/vector_map.h"
#include "refine/refine_map.h"

namespace sl {

// infer's defaults (--passes, --pass-tolerance): chosen by measurement (above).
inline constexpr int kDefaultPasses = 5;
inline constexpr double kDefaultPassTolerance = 0.01;
inline constexpr double kDefaultPassShrink = 1.0;
// Metres of line per stretch the shrink rule judges (about a refined piece's length).
inline constexpr double kShrinkStretch = 10.0;

struct PassOptions {
  int passes = kDefaultPasses;               // at most this many (>= 1)
  double tolerance = kDefaultPassTolerance;  // metres: a pass whose moves average at most this is the last
  // A stretch's mean move in a pass must be at most this times its last kept mean, or the stretch
  // is held (above). 0: off, every pass's moves are kept.
  double shrink = kDefaultPassShrink;
};

// What one pass did to the map: its own moves (not the total).
struct PassReport {
  int pass = 0;                  // 1-based
  int64_t moved_vertices = 0;    // vertices this pass moved (its kept moves)
  double mean_move = 0, max_move = 0;  // metres (3-D), over those
  int64_t held = 0;              // vertices held by this pass: their stretch's moves did not shrink (dropped)
  int64_t held_total = 0;        // vertices held by this pass and the ones before
};

// One pass: the displacement of every vertex of `map` (what refine_map or refine_map_tiles returns),
// and its report when `report` is not null.
using RefinePass = std::function<std::vector<Vec3d>(const SharedMap& map, int pass, MapRefineReport* report)>;
// Told after each pass: its report and the total displacement so far.
using AfterPass = std::function<void(const PassReport& pass, const std::vector<Vec3d>& total)>;
// Told after each pass, with what refine_once reported (when set, refine_once gets a report to fill)
// and the displacement it returned.
using PassDetail = std::function<void(int pass, const SharedMap& refined, const MapRefineReport& report,
                                      const std::vector<Vec3d>& d)>;

// Runs `refine_once` on `map`, then on the map moved by the displacements so far, as PassOptions
// says (held vertices stay where they were held); returns the total displacement of every vertex of
// `map`. `passes_out`: one report per pass
// run. Deterministic: the same inputs run the same passes (the stop is on the moves, not on time).
std::vector<Vec3d> refine_in_passes(const SharedMap& map, const PassOptions& options, const RefinePass& refine_once,
                                    std::vector<PassReport>* passes_out, const AfterPass& after_pass = nullptr,
                                    const PassDetail& detail = nullptr);

// The stretches the shrink rule judges: each line's vertices cut, in line order, where one is
// kShrinkStretch metres or more along the line from the stretch's first; a vertex shared by lines
// is in a stretch of each.
std::vector<std::vector<uint32_t>> shrink_stretches(const VectorMap& map);

// `map` with every vertex moved by d (world metres): the vertices and the lines' points alike,
// the rest (ids, categories, the source bytes for the write-back) as it was.
VectorMap moved_map(const VectorMap& map, const std::vector<Vec3d>& d);

// The moves of `report` (per category and in all) restated for the total displacement `d` of the
// passes, where the report came from the first pass; lines that moved in a later pass leave its
// list of lines left as given.
void restate_moves(const VectorMap& map, const std::vector<Vec3d>& d, const std::vector<std::string>& categories,
                   MapRefineReport* report);

// "pass 1: 812 vertices moved, mean 0.084 m, max 0.61 m" lines, one per pass, and why it stopped.
std::string to_text(const std::vector<PassReport>& passes, const PassOptions& options);

}  // namespace sl
