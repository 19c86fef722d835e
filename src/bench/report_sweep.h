#pragma once
// report.html for a sweep directory: the sweep's table and the Pareto chart of the spec's default
// axes, x = E2E-normalized interactivity p90 (tok/s/user, maximize) and y = total tok/s per GPU
// (maximize), each axis labelled with its direction, the frontier drawn through its points.
#include <cstddef>
#include <string>
#include <vector>

#include "bench/pareto.h"
#include "bench/report_read.h"

namespace paceline::bench {

ParetoAxis pareto_x_axis();
ParetoAxis pareto_y_axis();

// The chart's point for one run: (e2e_norm_interactivity_p90, total_tok_s_per_gpu).
ParetoPoint pareto_point(const RunSummary& run);

struct SweepReport {
  std::string html;
  std::string markdown;        // the seed-style table
  size_t points = 0;           // runs with both coordinates
  size_t frontier_points = 0;  // of those, on the Pareto frontier
  bool simulated = false;      // some run came from the simulator
  std::string scaling;         // a scaled run's transform, empty when every trace is the recording
};

SweepReport sweep_report(const std::string& sweep_dir);

// Writes sweep_dir/report.html and sweep_dir/sweep.md; returns what it wrote.
SweepReport write_sweep_report(const std::string& sweep_dir);

}  // namespace paceline::bench
