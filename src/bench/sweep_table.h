#pragma once
// One table for a sweep, in the seed PR's layout (CONC, delayer, total tok/s, per GPU, output
// tok/s, TTFT p50/p90, ITL p50/p90, interactivity p90, hold rate), as Markdown for stdout and as
// HTML for the sweep's report. Rows go by concurrency, then delayer off before on.
#include <string>
#include <vector>

#include "bench/report_read.h"

namespace paceline::bench {

// The runs sweep.json lists (or the run subdirectories), each read from its summary.json; an
// entry's concurrency and delayer fill in what the summary's settings do not say. Sorted by
// concurrency, then delayer, then directory.
std::vector<RunSummary> read_sweep_runs(const std::string& sweep_dir);

void sort_sweep_runs(std::vector<RunSummary>& runs);

std::string sweep_markdown(const std::vector<RunSummary>& runs);

// The same columns plus the Pareto chart's x value (E2E-normalized interactivity p90) and each
// run's directory, linked (relative to `sweep_dir`) to its report.html when that exists.
std::string sweep_table_html(const std::vector<RunSummary>& runs, const std::string& sweep_dir);

}  // namespace paceline::bench
