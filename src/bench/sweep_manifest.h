#pragma once
// sweep.json: the list of a sweep's runs, one subdirectory each, written by `paceline sweep` and
// read by the reports.
//   {"runs": [{"dir": "conc-4", "concurrency": 4, "delayer": "off"}, ...], "settings": {...}}
// `dir` is relative to the sweep directory. A directory without sweep.json whose subdirectories
// hold summary.json files is read as a sweep of those.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace paceline::bench {

struct SweepEntry {
  std::string dir;      // relative to the sweep directory
  int concurrency = 0;  // 0: take it from the run's summary
  std::string delayer;  // "on", "off", or empty: take it from the run's summary
};

struct SweepManifest {
  std::vector<SweepEntry> runs;
  nlohmann::json settings = nlohmann::json::object();  // what all points share
};

void write_sweep_manifest(const std::string& sweep_dir, const SweepManifest& manifest);

// From sweep.json, else from the subdirectories holding a summary.json (in name order). Fails
// when neither gives a run.
SweepManifest read_sweep_manifest(const std::string& sweep_dir);

// Whether `dir` is a sweep: it has sweep.json, or no summary.json of its own but subdirectories
// with one.
bool is_sweep_dir(const std::string& dir);

}  // namespace paceline::bench
