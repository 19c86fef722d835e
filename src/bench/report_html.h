#pragma once
// report.html for one run directory (summary.json and records.jsonl): a self-contained page with
// the run's validity and warnings first, its settings, the summary metrics, and SVG charts of
// output throughput over time and of the TTFT and ITL distributions.
#include <string>

namespace paceline::bench {

// The page's HTML. Fails when summary.json is missing; without records.jsonl the charts say
// there is no data.
std::string run_report_html(const std::string& run_dir);

// Writes run_dir/report.html. `paceline bench` calls it at the end of each run.
void write_report_html(const std::string& run_dir);

}  // namespace paceline::bench
