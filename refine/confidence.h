// How sure a move is: a standard deviation in metres per map vertex, across its line and vertically,
// and the gate that moves a vertex only where the evidence supports it.
//
// The raw material is the views' spread (forward_views: how much the model's predictions on the
// mirror images of one sample disagree, RefinedPiece::spread, interpolated to the map's vertices), or
// for a model with a variance head (ModelConfig::variance) the head's sigma in its place: the same
// calibration below applies to either (the head learns the training residuals, which are smaller
// than the errors on data it has not seen). A spread is not yet a standard deviation: the views share the model's blind spots, so they disagree
// less than they err, and where they agree exactly the model still errs. A calibration maps it per
// axis (and per category, where there are enough vertices to fit one) to
//     sigma = sqrt((a * spread)^2 + b^2)
// fitted by maximum likelihood under N(0, sigma^2) to what the model proposes for lines that are
// already right (evaluate-map's fixed point, first pass: there every proposed shift is an error), on
// one set of vertices, and judged on another (Coverage: the share of true errors within 1 and 2 sigma,
// overall and per tenth of the vertices by sigma -- a constant sigma has one bin and fails).
//
// sigma is thus the scatter of the model's proposal around a line that needs no move: the yardstick
// of the gate (gate_moves). A vertex moves across its line by the proposed shift when that shift is
// more than k sigma across (a correct line moves with probability about 32% at k = 1, 5% at k = 2,
// if the calibration holds), and vertically likewise; along the line it never moves (the map maker's
// vertex spacing is theirs, and the model's along-line offset is the least certain). A vertex whose
// sigma across exceeds flag_sigma is flagged for the map maker to look at: a shift beyond k sigma is
// still made (a line 30 cm off is moved however unsure the model is of the last few cm; the next
// pass, nearer the line, is surer). Over passes the last pass that refined a vertex decides whether
// it is flagged.
#pragma once
#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "formats/maps/vector_map.h"
#include "refine/passes.h"
#include "refine/refine_map.h"

namespace sl {

enum Axis : int { kAcross = 0, kVertical = 1 };
inline const char* axis_name(int axis) { return axis == kAcross ? "across" : "vertical"; }

struct AxisCalibration {
  double a = 0, b = 0;  // sigma = sqrt((a * spread)^2 + b^2), metres
  // When not empty, sigma is read from these instead: (spread, sigma) points, both ascending,
  // linear between them and flat beyond the ends (fit_axis_binned).
  std::vector<std::array<double, 2>> knots;
  double sigma(double spread) const;
};

struct Calibration {
  // By category; "" holds the fit over every category (for categories without their own).
  std::map<std::string, std::array<AxisCalibration, 2>> fits;
  std::string note;        // what it was fitted on (for the reader of calibration.json)
  std::string checkpoint;  // the checkpoint file's name (no folder) whose spreads it calibrates
  bool empty() const { return fits.empty(); }
  // The category's fit, else the all-categories one; throws sl::Error when there is none.
  const std::array<AxisCalibration, 2>& of(const std::string& category) const;
};

// One vertex's evidence: its category, the spread (across, vertical) and the true error of the
// position it is judged at (minus the true line: signed across, vertical), metres; split 0 or 1.
struct ConfidenceSample {
  std::string category;
  std::array<double, 2> spread{}, error{};
  int split = 0;
  int tile = -1;        // the region's tile that holds the vertex (split = tile % 2), -1 unknown
  int64_t vertex = -1;  // the map vertex, -1 unknown
};

// The samples as CSV (category, split, tile, vertex, spread and error across and vertically, metres),
// one row per vertex, for a study of the calibration outside streamline; written atomically.
void write_confidence_samples(const std::string& path, const std::vector<ConfidenceSample>& samples);

// The maximum-likelihood (a, b) of errors e_i ~ N(0, (a s_i)^2 + b^2), a, b >= 0: a coarse grid in
// log space (0 a candidate for each) then finer ones around the best (deterministic). Throws
// sl::Error for fewer than 2 samples or sizes that differ.
AxisCalibration fit_axis(const std::vector<double>& spread, const std::vector<double>& error);

// fit_axis, then the sigma per tenth of the samples by spread: in each tenth the sigma whose 1 and 2
// sigma cover the tenth's errors nearest 68.3% and 95.4% (least squares of the two misses), made
// non-decreasing in the spread by pooling adjacent tenths, as knots at each tenth's median spread.
// A spread that ranks the errors only partly (as the views' does) is then calibrated per tenth on
// the samples it is fitted on, and the shape the error takes in each tenth (its tails) counts, where
// the (a, b) model assumes one Gaussian throughout. With fewer than 10 * min_per_bin samples, only
// fit_axis's (a, b).
AxisCalibration fit_axis_binned(const std::vector<double>& spread, const std::vector<double>& error,
                                int64_t min_per_bin = 20);

// Fits on the samples of split `fit_split`: per axis for "" (all) and for every category with at
// least min_per_category samples there; binned (fit_axis_binned) or, with binned false, fit_axis.
Calibration fit_calibration(const std::vector<ConfidenceSample>& samples, int fit_split, int64_t min_per_category = 100,
                            bool binned = true);

struct CoverageRow {
  std::string category;  // "all" for every category
  int axis = kAcross;
  int64_t n = 0;
  double within1 = 0, within2 = 0;  // shares in [0, 1]
  double mean_sigma = 0, rms_error = 0;
  // Tenths of the vertices by sigma (ascending; equal sigmas never split, so a sigma with fewer than
  // ten values has fewer bins): n, sigma range, shares within 1 and 2 sigma.
  struct Decile {
    int64_t n = 0;
    double sigma_lo = 0, sigma_hi = 0, within1 = 0, within2 = 0;
  };
  std::vector<Decile> deciles;
  // Within the target (68% and 95%, +- tolerance) overall and in each of ten deciles? (A constant
  // sigma has one bin: never calibrated.)
  bool calibrated(double tolerance = 0.05) const;
};

// How well a split's vertices pin a calibration's scale. Errors are correlated within a tile (a
// scene, a cloud: its lines' points, its paint and curbs), and their size relative to sigma varies
// from tile to tile by more than the spread says, so a fit on few tiles knows its scale only
// roughly whatever its vertex count. Per tile with at least min_per_tile vertices of the split: the
// rms of error / sigma on `axis`; log_sd is the standard deviation of its log over those tiles, and
// share_2se the points by which the share within 1 sigma may move at two standard errors of their
// mean (100 x 2 phi(1) x 2 log_sd / sqrt(tiles)): the scale a fit on these tiles can promise.
struct ScaleSpread {
  int tiles = 0;        // tiles with at least min_per_tile vertices
  double log_sd = 0;    // of the per-tile log rms(error / sigma)
  double share_2se = 0; // points within 1 sigma, at two standard errors
};
ScaleSpread scale_spread(const Calibration& cal, const std::vector<ConfidenceSample>& samples, int split, int axis,
                         int64_t min_per_tile = 20);
// In words, both axes: "its 6 tiles pin the share within 1 sigma to +-9.1 points across and +-4.2
// vertically (errors over sigma differ from tile to tile: x1.31 and x1.14, one standard deviation);
// about 20 tiles would pin +-5"; "" with fewer than 2 tiles of min_per_tile vertices.
std::string scale_spread_text(const Calibration& cal, const std::vector<ConfidenceSample>& samples, int split,
                              const std::string& tiles_word = "tiles");

// The coverage of `cal` on the samples of split `split` (-1: all), per category and axis, then "all".
std::vector<CoverageRow> coverage(const Calibration& cal, const std::vector<ConfidenceSample>& samples, int split);
std::string to_text(const std::vector<CoverageRow>& rows);

// calibration.json: {"format": "streamline calibration 1", "note": ..., "checkpoint": "step_N.safetensors",
// "fits": {"<category>": {"across": {"a": .., "b": .., "knots": [[spread, sigma], ..]}, "vertical": {...}}, ...}}
// ("knots" optional). read throws sl::Error naming the file and the reason; write is atomic.
void write_calibration(const std::string& path, const Calibration& cal);
Calibration read_calibration(const std::string& path);

// Per map vertex: the horizontal unit normal of its line there (left of the line's direction, from its
// neighbours in the first line that holds it) and that line's category ("" for a vertex on no line).
struct VertexFrame {
  std::vector<std::array<double, 2>> normal;
  std::vector<std::string> category;
};
VertexFrame vertex_frames(const VectorMap& map, const std::vector<std::string>& categories);

// The error of each vertex against the true map (the same line identity, map_error's): the refined
// vertex minus its closest point on the true line in xy, across (signed along `frames`' normal) and
// vertically (the true line's height there). Vertices of lines without a twin: NaN.
std::vector<std::array<double, 2>> vertex_errors(const VectorMap& truth, const VectorMap& refined,
                                                 const VertexFrame& frames);

enum class VertexFate : uint8_t {
  Untouched = 0,  // not on a wanted line the refinement reached
  NoData,         // on a line on the clouds, no refined piece covers it
  Left,           // refined, and the shift is within its uncertainty: left as given
  Moved,          // refined and moved (across and/or vertically)
  Flagged         // its uncertainty is too large to trust: flagged (moved or not)
};
const char* fate_name(VertexFate f);

struct GateOptions {
  double k = 2.0;             // a component moves when |shift| > k sigma
  double flag_sigma = 0.05;   // m: a vertex with sigma across above this is flagged (after the last pass)
  double unsettled = 0.05;    // m: a vertex the last pass still moved further than this is flagged
};

struct GateResult {
  std::vector<Vec3d> d;                        // the gated displacement per vertex (world metres)
  std::vector<VertexFate> fate;
  std::vector<std::array<double, 2>> sigma;    // calibrated (across, vertical); 0 where not refined
  std::vector<std::array<double, 2>> shift;    // the proposed shift (across, vertical)
};

// `d` and `report` from one refinement of `map` (refine_map / refine_map_tiles); the wanted categories
// as the refinement had them.
GateResult gate_moves(const VectorMap& map, const std::vector<Vec3d>& d, const MapRefineReport& report,
                      const Calibration& cal, const GateOptions& options, const std::vector<std::string>& categories);

// The fate of each vertex over the passes of a gated refinement: flagged when the last pass that
// refined it flagged it, or when the last pass of all still moved it further than `unsettled` metres
// (the refinement had not settled there); else moved when its total displacement is not zero; else
// left as right when a pass refined it; else no data when a pass found it on the clouds without a
// refined piece.
class GateTally {
 public:
  explicit GateTally(double unsettled = GateOptions{}.unsettled) : unsettled_(unsettled) {}
  void add(const GateResult& g);  // one pass, in order
  std::vector<VertexFate> fates(const std::vector<Vec3d>& total) const;
  // The last calibrated sigma (across, vertical) and proposed shift of each vertex (0 where never refined).
  const std::vector<std::array<double, 2>>& sigma() const { return sigma_; }
  const std::vector<std::array<double, 2>>& shift() const { return shift_; }
  int passes() const { return passes_; }
  // The last pass still moved vertex v further than `unsettled` metres.
  bool unsettled(size_t v) const { return v < unsettled_now_.size() && unsettled_now_[v]; }

 private:
  double unsettled_;
  std::vector<uint8_t> refined_, flagged_, no_data_, unsettled_now_;
  std::vector<std::array<double, 2>> sigma_, shift_;
  int passes_ = 0;
};

// `inner` with the gate applied to each pass's displacements (the tally, when given, told each pass).
RefinePass gated_pass(RefinePass inner, const Calibration& cal, const GateOptions& options,
                      std::vector<std::string> categories, GateTally* tally);

// Vertices per fate, by category (vertex_frames' category of each vertex), then "all".
struct FateCounts {
  std::map<std::string, std::array<int64_t, 5>> by;  // indexed by VertexFate
};
FateCounts count_fates(const VectorMap& map, const std::vector<VertexFate>& fates, const std::vector<std::string>& categories);
std::string to_text(const FateCounts& c);

}  // namespace sl
