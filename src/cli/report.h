#pragma once
// `paceline report DIR`: writes DIR/report.html for a run directory (summary.json, records.jsonl)
// or a sweep directory (sweep.json or run subdirectories; then also the table on stdout, sweep.md
// and the Pareto frontier's point count).
#include <CLI/CLI.hpp>
#include <string>

namespace paceline {

struct ReportOptions {
  std::string dir;
};

void add_report_options(CLI::App& cmd, ReportOptions& options);
int run_report(const ReportOptions& options);

// The sweep part of `report`, also what `paceline sweep` ends with: writes the files, prints the
// table and "Pareto frontier: k of n points".
void report_sweep_dir(const std::string& dir);

}  // namespace paceline
