#pragma once
// Charts as inline SVG text for the self-contained HTML reports: no scripts, no external
// resources, tooltips through SVG <title> elements. One chart: a title, two labelled linear axes
// with rounded ticks, and any number of series drawn as lines, steps (CDFs) or labelled points.
#include <string>
#include <string_view>
#include <vector>

namespace paceline::bench {

enum class SeriesStyle {
  kLine,        // a polyline through the points in order
  kStep,        // horizontal then vertical segments: an empirical CDF
  kPoints,      // markers only
  kLinePoints,  // a polyline with markers
};

struct ChartPoint {
  double x = 0;
  double y = 0;
  std::string label;  // in the marker's tooltip (and next to it with show_labels); may be empty
};

struct ChartSeries {
  std::string name;  // the legend's entry; empty: not in the legend
  std::string color = "#1f77b4";
  SeriesStyle style = SeriesStyle::kLine;
  double stroke_width = 2.0;
  bool dashed = false;
  bool show_labels = false;        // each marker's label written next to it
  std::vector<ChartPoint> points;  // non-finite points are skipped
};

struct ChartAxis {
  std::string label;
  bool include_zero = true;  // the range always reaches 0
};

struct Chart {
  std::string title;
  ChartAxis x;
  ChartAxis y;
  std::vector<ChartSeries> series;
  int width = 720;
  int height = 400;
};

std::string render_svg(const Chart& chart);

// Escapes & < > " ' for XML and HTML text and attribute values.
std::string xml_escape(std::string_view text);

// Round tick values (1, 2 or 5 times a power of ten apart) covering [lo, hi], at most about
// `max_ticks` of them; the first is <= lo and the last >= hi.
std::vector<double> nice_ticks(double lo, double hi, int max_ticks);

}  // namespace paceline::bench
