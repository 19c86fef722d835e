#include "bench/report_sweep.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

#include <fmt/format.h>

#include "base/error.h"
#include "bench/report_page.h"
#include "bench/svg_chart.h"
#include "bench/sweep_table.h"

namespace paceline::bench {

namespace {

namespace fs = std::filesystem;

const char* kGroupColors[] = {"#1f77b4", "#ff7f0e", "#9467bd", "#8c564b", "#17becf", "#7f7f7f"};

std::string axis_label(const ParetoAxis& a) {
  return fmt::format("{} - {}: {}", a.label, direction_name(a.direction),
                     direction_hint(a.direction));
}

// The marker's label; its color and the legend say the delayer setting.
std::string point_label(const RunSummary& r) {
  return fmt::format("c{}", r.concurrency);
}

std::string point_name(const RunSummary& r) {
  return r.delayer.empty() ? point_label(r) : point_label(r) + " delayer " + r.delayer;
}

Chart pareto_chart(const std::vector<RunSummary>& runs, const std::vector<ParetoPoint>& points,
                   const std::vector<size_t>& frontier, size_t plotted) {
  Chart c;
  c.title = fmt::format("Pareto frontier: {} of {} points", frontier.size(), plotted);
  c.x.label = axis_label(pareto_x_axis());
  c.y.label = axis_label(pareto_y_axis());
  c.height = 460;
  // Each delayer setting is one curve through its concurrencies (runs are sorted by them).
  std::map<std::string, size_t> group_of;
  for (size_t i = 0; i < runs.size(); ++i) {
    std::string name = runs[i].delayer.empty() ? "runs" : "delayer " + runs[i].delayer;
    auto [it, added] = group_of.emplace(name, c.series.size());
    if (added) {
      ChartSeries s;
      s.name = name;
      s.color = kGroupColors[it->second % std::size(kGroupColors)];
      s.style = SeriesStyle::kLinePoints;
      s.stroke_width = 1;
      s.dashed = true;
      s.show_labels = true;
      c.series.push_back(std::move(s));
    }
    c.series[it->second].points.push_back({points[i].x, points[i].y, point_label(runs[i])});
  }
  ChartSeries f;
  f.name = "Pareto frontier";
  f.color = "#d62728";
  f.style = SeriesStyle::kLinePoints;
  f.stroke_width = 3;
  for (size_t i : frontier) f.points.push_back({points[i].x, points[i].y, point_name(runs[i])});
  c.series.insert(c.series.begin(), std::move(f));  // underneath the runs' markers and labels
  return c;
}

std::string frontier_table(const std::vector<RunSummary>& runs,
                           const std::vector<ParetoPoint>& points,
                           const std::vector<size_t>& frontier) {
  std::vector<std::vector<std::string>> rows;
  for (size_t i : frontier) {
    rows.push_back({xml_escape(point_name(runs[i])), format_number(points[i].x, 1),
                    format_number(points[i].y, 1)});
  }
  return html_table({"frontier point", pareto_x_axis().label, pareto_y_axis().label}, rows);
}

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) fail("{}: cannot write", path.string());
}

}  // namespace

ParetoAxis pareto_x_axis() {
  return {"E2E-normalized interactivity p90 (tok/s/user)", Direction::kMaximize};
}

ParetoAxis pareto_y_axis() {
  return {"total tok/s per GPU", Direction::kMaximize};
}

ParetoPoint pareto_point(const RunSummary& run) {
  return {run.summary.e2e_norm_interactivity.p90, run.summary.total_tok_s_per_gpu};
}

SweepReport sweep_report(const std::string& sweep_dir) {
  std::vector<RunSummary> runs = read_sweep_runs(sweep_dir);
  std::vector<ParetoPoint> points;
  for (const RunSummary& r : runs) points.push_back(pareto_point(r));
  std::vector<size_t> frontier =
      pareto_frontier(points, pareto_x_axis().direction, pareto_y_axis().direction);

  SweepReport report;
  report.markdown = sweep_markdown(runs);
  report.frontier_points = frontier.size();
  for (const ParetoPoint& p : points) {
    if (std::isfinite(p.x) && std::isfinite(p.y)) ++report.points;
  }
  for (const RunSummary& r : runs) {
    report.simulated = report.simulated || r.simulated;
    if (report.scaling.empty()) {
      for (const std::string& part : r.scaling) {
        report.scaling += (report.scaling.empty() ? "" : ", ") + part;
      }
    }
  }
  std::string body;
  for (const RunSummary& r : runs) {
    if (r.simulated) {
      body += html_banner("note", "Simulated sweep: the points come from paceline's simulator.");
      break;
    }
  }
  for (const RunSummary& r : runs) {
    if (!r.scaling.empty()) {
      body += html_banner("warning", "Scaled trace: not comparable with runs of the full trace.");
      break;
    }
  }
  body += "<h2>Runs</h2>\n" + sweep_table_html(runs, sweep_dir);
  body +=
      "<h2>Pareto frontier</h2>\n<p>A point is on the frontier when no other point is at "
      "least as good on both axes and strictly better on one. x: " +
      xml_escape(axis_label(pareto_x_axis())) + "; y: " + xml_escape(axis_label(pareto_y_axis())) +
      ".</p>\n";
  body += render_svg(pareto_chart(runs, points, frontier, report.points));
  body += frontier_table(runs, points, frontier);
  report.html = html_page("paceline sweep: " + dir_display_name(sweep_dir), body);
  return report;
}

SweepReport write_sweep_report(const std::string& sweep_dir) {
  SweepReport report = sweep_report(sweep_dir);
  write_text(fs::path(sweep_dir) / "report.html", report.html);
  write_text(fs::path(sweep_dir) / "sweep.md", report.markdown);
  return report;
}

}  // namespace paceline::bench
