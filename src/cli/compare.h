#pragma once
// `paceline compare A B [--repeats A2,A3 B2,B3] [--json FILE]`: B against A, metric by metric, as
// a Markdown table on stdout. With repeated same-config runs of either side, the noise band and
// the deltas outside it in bold (spec: "Comparison A vs B").
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace paceline {

struct CompareOptions {
  std::string a;  // a run directory, or several separated by commas (repeats)
  std::string b;
  // Exactly two lists when given: A's repeat directories, then B's, comma-separated; "-" for none.
  std::vector<std::string> repeats;
  std::string json_out;  // also write the comparison as JSON here
};

void add_compare_options(CLI::App& cmd, CompareOptions& options);
int run_compare(const CompareOptions& options);

}  // namespace paceline
