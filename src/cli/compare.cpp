#include "cli/compare.h"

#include <cstdio>
#include <fstream>

#include "base/error.h"
#include "bench/compare.h"
#include "bench/report_read.h"

namespace paceline {

namespace {

std::vector<std::string> split_dirs(const std::string& list) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i <= list.size()) {
    size_t comma = list.find(',', i);
    if (comma == std::string::npos) comma = list.size();
    std::string item = list.substr(i, comma - i);
    if (!item.empty() && item != "-") out.push_back(item);
    i = comma + 1;
  }
  return out;
}

bench::CompareSide read_side(const std::string& main, const std::string& repeats) {
  bench::CompareSide side;
  side.dirs = split_dirs(main);
  for (std::string& d : split_dirs(repeats)) side.dirs.push_back(std::move(d));
  if (side.dirs.empty()) fail("compare: a side has no run directory");
  side.name = bench::dir_display_name(side.dirs.front());
  for (const std::string& dir : side.dirs) side.runs.push_back(bench::read_run_summary(dir).json);
  return side;
}

}  // namespace

void add_compare_options(CLI::App& cmd, CompareOptions& o) {
  cmd.add_option("a", o.a, "baseline run directory (comma-separated for repeats)")->required();
  cmd.add_option("b", o.b, "run directory compared against it (comma-separated for repeats)")
      ->required();
  cmd.add_option("--repeats", o.repeats,
                 "repeated same-config runs: A's directories, then B's, each comma-separated, "
                 "'-' for none (e.g. --repeats a2,a3 b2,b3)")
      ->expected(2);
  cmd.add_option("--json", o.json_out, "also write the comparison as JSON to this file");
}

int run_compare(const CompareOptions& o) {
  std::string ra = o.repeats.size() == 2 ? o.repeats[0] : "";
  std::string rb = o.repeats.size() == 2 ? o.repeats[1] : "";
  bench::Comparison c = bench::compare_runs(read_side(o.a, ra), read_side(o.b, rb));
  std::printf("%s", bench::comparison_markdown(c).c_str());
  if (!o.json_out.empty()) {
    std::ofstream out(o.json_out, std::ios::binary);
    out << bench::comparison_json(c).dump(2) << '\n';
    if (!out) fail("{}: cannot write", o.json_out);
  }
  return 0;
}

}  // namespace paceline
