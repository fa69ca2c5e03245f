// Inline SVG charts for the run report: axes with readable ticks and units, linear or log y,
// and series downsampled for drawing only (the data the report reads is never changed).
#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace sl::report {

struct XY {
  double x = 0, y = 0;
};

// Points to draw for a series over a plot `buckets` pixels wide. At most 2 * buckets points
// are kept: when there are more, each pixel column keeps its lowest and highest point (in
// their original order), so spikes and the noise band stay visible at any run length.
// `pts` must be sorted by x; non-finite values are dropped first.
std::vector<XY> downsample_minmax(const std::vector<XY>& pts, int buckets);

// TensorBoard's smoothing: an exponential moving average with its start-up bias removed.
std::vector<double> smooth_ema(const std::vector<double>& y, double weight);

// "Nice" tick values (1, 2, 5 x 10^k steps) covering [lo, hi], about `target` of them.
std::vector<double> nice_ticks(double lo, double hi, int target);
// Tick values of a log axis: the powers of ten in [lo, hi], with 2 and 5 added when the range
// spans fewer than three decades. lo > 0.
std::vector<double> log_ticks(double lo, double hi);
// Short label of a tick value: 1.5k, 2M, 0.001, 1e-05.
std::string tick_label(double v);

// Log scale when the values span at least two decades (all positive).
bool wants_log_scale(const std::vector<XY>& pts);

struct Series {
  std::string name;   // legend text; also the polyline's data-series attribute
  std::string color;  // CSS color
  std::vector<XY> points;
  double width = 1.5;
  double opacity = 1.0;
  bool dashed = false;
  bool markers = false;  // a dot on every drawn point (sparse series such as evaluations)
};

struct Chart {
  std::string id;  // element id of the <svg>
  std::string x_label, y_label;  // with units, e.g. "step", "loss (MSE, m²)"
  std::vector<Series> series;
  int width = 880, height = 260;
  enum class YScale { Auto, Linear, Log } y_scale = YScale::Auto;
  bool y_from_zero = false;  // linear axis that starts at 0 (shares, speeds)
  double y_min = 0, y_max = 0;  // fixed range when y_max > y_min
};

// Plot width in pixels for a chart of `width` (the number of downsampling buckets).
int plot_width(int width);

// The chart as one <svg> element. Every series becomes a <polyline data-series=NAME
// data-n=POINTS_IN_DATA points="..."> (plus <circle>s with markers, or for a single point); an
// empty chart says so.
std::string render_chart(const Chart& c);

// Escapes &, <, >, " and ' for HTML text and attributes.
std::string html_escape(const std::string& s);

}  // namespace sl::report
