#include "cli/report.h"

#include <cstdio>
#include <filesystem>

#include "bench/report_html.h"
#include "bench/report_sweep.h"
#include "bench/sweep_manifest.h"

namespace paceline {

void add_report_options(CLI::App& cmd, ReportOptions& o) {
  cmd.add_option("dir", o.dir, "a run directory (summary.json) or a sweep directory (sweep.json)")
      ->required();
}

void report_sweep_dir(const std::string& dir) {
  bench::SweepReport r = bench::write_sweep_report(dir);
  bench::ParetoAxis x = bench::pareto_x_axis(), y = bench::pareto_y_axis();
  if (r.simulated) std::printf("> **SIMULATED**: every point comes from paceline's simulator\n");
  if (!r.scaling.empty()) {
    std::printf("> **TRANSFORMED TRACE** (%s): not comparable with full-trace runs\n",
                r.scaling.c_str());
  }
  if (r.simulated || !r.scaling.empty()) std::printf("\n");
  std::printf("%s\n", r.markdown.c_str());
  std::printf("Pareto frontier: %zu of %zu points (x: %s, %s; y: %s, %s)\n", r.frontier_points,
              r.points, x.label.c_str(), bench::direction_name(x.direction), y.label.c_str(),
              bench::direction_name(y.direction));
  std::printf("wrote %s\n", (std::filesystem::path(dir) / "report.html").string().c_str());
}

int run_report(const ReportOptions& o) {
  if (bench::is_sweep_dir(o.dir)) {
    report_sweep_dir(o.dir);
  } else {
    bench::write_report_html(o.dir);
    std::printf("wrote %s\n", (std::filesystem::path(o.dir) / "report.html").string().c_str());
  }
  return 0;
}

}  // namespace paceline
