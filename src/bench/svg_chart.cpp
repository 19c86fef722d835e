#include "bench/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace paceline::bench {

namespace {

constexpr double kLeft = 72, kRight = 24, kTop = 40, kBottom = 56;

struct Range {
  double lo = std::numeric_limits<double>::infinity();
  double hi = -std::numeric_limits<double>::infinity();
  bool empty() const { return lo > hi; }
  void add(double v) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
};

// 1, 2 or 5 times a power of ten, at least `raw`.
double nice_step(double raw) {
  double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * mag >= raw * (1 - 1e-9)) return m * mag;
  }
  return 10 * mag;
}

std::string tick_label(double v, double step) {
  if (std::abs(v) < step * 1e-9) v = 0;
  int decimals = step >= 1 ? 0 : static_cast<int>(std::ceil(-std::log10(step) - 1e-9));
  return fmt::format("{:.{}f}", v, std::clamp(decimals, 0, 6));
}

// Maps data values onto the plot area.
struct Frame {
  std::vector<double> xt, yt;
  double x0, x1, y0, y1;  // pixel bounds of the plot area
  double px(double x) const { return x0 + (x - xt.front()) / (xt.back() - xt.front()) * (x1 - x0); }
  double py(double y) const { return y1 - (y - yt.front()) / (yt.back() - yt.front()) * (y1 - y0); }
};

std::vector<double> axis_ticks(Range r, bool include_zero, int max_ticks) {
  if (include_zero) {
    r.add(0);
  }
  if (r.hi == r.lo) {
    double pad = r.lo == 0 ? 1 : std::abs(r.lo) * 0.1;
    r.lo -= include_zero && r.lo >= 0 ? 0 : pad;
    r.hi += pad;
  }
  return nice_ticks(r.lo, r.hi, max_ticks);
}

bool finite(const ChartPoint& p) {
  return std::isfinite(p.x) && std::isfinite(p.y);
}

std::string polyline(const Frame& f, const ChartSeries& s, bool step) {
  std::string pts;
  const ChartPoint* prev = nullptr;
  for (const ChartPoint& p : s.points) {
    if (!finite(p)) continue;
    if (step && prev) pts += fmt::format("{:.1f},{:.1f} ", f.px(p.x), f.py(prev->y));
    pts += fmt::format("{:.1f},{:.1f} ", f.px(p.x), f.py(p.y));
    prev = &p;
  }
  return fmt::format(
      "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"{}\"{} points=\"{}\"/>\n", s.color,
      s.stroke_width, s.dashed ? " stroke-dasharray=\"6 4\"" : "", pts);
}

std::string markers(const Frame& f, const ChartSeries& s) {
  std::string out;
  for (const ChartPoint& p : s.points) {
    if (!finite(p)) continue;
    double cx = f.px(p.x), cy = f.py(p.y);
    std::string tip = p.label.empty() ? fmt::format("{}: ({:.4g}, {:.4g})", s.name, p.x, p.y)
                                      : fmt::format("{} ({:.4g}, {:.4g})", p.label, p.x, p.y);
    out += fmt::format(
        "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\" fill=\"{}\"><title>{}</title>"
        "</circle>\n",
        cx, cy, s.color, xml_escape(tip));
    if (s.show_labels && !p.label.empty()) {
      // Labels of points near the right edge go to their left, so they stay inside the chart.
      bool left = cx > f.x0 + 0.8 * (f.x1 - f.x0);
      out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" class=\"pt\"{}>{}</text>\n",
                         left ? cx - 6 : cx + 6, cy - 6, left ? " text-anchor=\"end\"" : "",
                         xml_escape(p.label));
    }
  }
  return out;
}

std::string axes(const Frame& f, const Chart& c) {
  std::string out;
  double xstep = f.xt.size() > 1 ? f.xt[1] - f.xt[0] : 1;
  double ystep = f.yt.size() > 1 ? f.yt[1] - f.yt[0] : 1;
  for (double t : f.xt) {
    double x = f.px(t);
    out += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" "
        "class=\"grid\"/>\n<text x=\"{0:.1f}\" y=\"{3:.1f}\" class=\"xt\">{4}</text>\n",
        x, f.y0, f.y1, f.y1 + 16, tick_label(t, xstep));
  }
  for (double t : f.yt) {
    double y = f.py(t);
    out += fmt::format(
        "<line x1=\"{1:.1f}\" y1=\"{0:.1f}\" x2=\"{2:.1f}\" y2=\"{0:.1f}\" "
        "class=\"grid\"/>\n<text x=\"{3:.1f}\" y=\"{4:.1f}\" class=\"yt\">{5}</text>\n",
        y, f.x0, f.x1, f.x0 - 6, y + 4, tick_label(t, ystep));
  }
  out += fmt::format(
      "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" "
      "class=\"frame\"/>\n",
      f.x0, f.y0, f.x1 - f.x0, f.y1 - f.y0);
  out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" class=\"xl\">{}</text>\n", (f.x0 + f.x1) / 2,
                     f.y1 + 40, xml_escape(c.x.label));
  out +=
      fmt::format("<text transform=\"translate(16 {:.1f}) rotate(-90)\" class=\"yl\">{}</text>\n",
                  (f.y0 + f.y1) / 2, xml_escape(c.y.label));
  return out;
}

// Entries in the title's row, right-aligned, so they never cover data.
std::string legend(const Frame& f, const Chart& c) {
  std::string out;
  double x = f.x1;
  for (auto it = c.series.rbegin(); it != c.series.rend(); ++it) {
    if (it->name.empty()) continue;
    x -= 7.0 * static_cast<double>(it->name.size()) + 4;  // about 7 px per character at 11 px
    out +=
        fmt::format("<text x=\"{:.1f}\" y=\"24\" class=\"lg\">{}</text>", x, xml_escape(it->name));
    x -= 18;
    out += fmt::format("<rect x=\"{:.1f}\" y=\"18\" width=\"14\" height=\"4\" fill=\"{}\"/>\n", x,
                       it->color);
    x -= 14;
  }
  return out;
}

const char* kChartStyle =
    "<style>.grid{stroke:#e3e3e3;stroke-width:1}.frame{fill:none;stroke:#888}"
    ".xt{font:11px sans-serif;text-anchor:middle;fill:#444}"
    ".yt{font:11px sans-serif;text-anchor:end;fill:#444}"
    ".xl,.yl{font:12px sans-serif;text-anchor:middle;fill:#222}"
    ".tt{font:bold 14px sans-serif;fill:#222}.lg,.pt{font:11px sans-serif;fill:#222}"
    ".nd{font:13px sans-serif;fill:#888;text-anchor:middle}</style>\n";

}  // namespace

std::string xml_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::vector<double> nice_ticks(double lo, double hi, int max_ticks) {
  if (!std::isfinite(lo) || !std::isfinite(hi) || hi <= lo) return {lo, lo + 1};
  double step = nice_step((hi - lo) / std::max(1, max_ticks - 1));
  double first = std::floor(lo / step + 1e-9) * step;
  std::vector<double> ticks;
  for (double t = first;; t += step) {
    ticks.push_back(t);
    if (t >= hi - step * 1e-9) break;
  }
  return ticks;
}

std::string render_svg(const Chart& c) {
  std::string out = fmt::format(
      "<svg viewBox=\"0 0 {0} {1}\" width=\"{0}\" height=\"{1}\" role=\"img\" "
      "aria-label=\"{2}\" class=\"chart\">\n{3}"
      "<text x=\"{4}\" y=\"24\" class=\"tt\">{2}</text>\n",
      c.width, c.height, xml_escape(c.title), kChartStyle, kLeft);
  Range xr, yr;
  for (const ChartSeries& s : c.series) {
    for (const ChartPoint& p : s.points) {
      if (!finite(p)) continue;
      xr.add(p.x);
      yr.add(p.y);
    }
  }
  Frame f{{}, {}, kLeft, c.width - kRight, kTop, c.height - kBottom};
  if (xr.empty()) {
    f.xt = {0, 1};
    f.yt = {0, 1};
    out += axes(f, c);
    out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" class=\"nd\">no data</text>\n",
                       (f.x0 + f.x1) / 2, (f.y0 + f.y1) / 2);
    return out + "</svg>\n";
  }
  f.xt = axis_ticks(xr, c.x.include_zero, 9);  // the wide axis gets more ticks
  f.yt = axis_ticks(yr, c.y.include_zero, 6);
  out += axes(f, c);
  for (const ChartSeries& s : c.series) {
    switch (s.style) {
      case SeriesStyle::kLine:
        out += polyline(f, s, false);
        break;
      case SeriesStyle::kStep:
        out += polyline(f, s, true);
        break;
      case SeriesStyle::kPoints:
        out += markers(f, s);
        break;
      case SeriesStyle::kLinePoints:
        out += polyline(f, s, false) + markers(f, s);
        break;
    }
  }
  out += legend(f, c);
  return out + "</svg>\n";
}

}  // namespace paceline::bench
