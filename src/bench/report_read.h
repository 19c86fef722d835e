#pragma once
// Reading a finished run back from its directory: summary.json into the Summary the writers
// take, plus what the reports show about the run (concurrency, delayer, hold rate, whether it was
// simulated or ran a scaled trace). The reports work from files alone, so `paceline report` and
// `paceline compare` can look at runs made earlier, elsewhere, or by the simulator.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/summary.h"

namespace paceline::bench {

struct RunSummary {
  std::string dir;
  nlohmann::json json;              // summary.json as written
  nlohmann::json settings;          // its "settings" object (empty object when absent)
  Summary summary;                  // the metrics, null values as NaN
  int concurrency = 0;              // settings.concurrency; 0 when unknown
  std::string delayer;              // "on", "off", or empty when unknown
  std::optional<double> hold_rate;  // the server's delayer hold rate, a fraction
  bool simulated = false;           // made by the simulator, not against a server
  // One line per trace transform that makes the run differ from a full replay (--max-isl,
  // --isl-scale, --osl-scale); empty for a full run.
  std::vector<std::string> scaling;
};

// Summary fields from summary.json; a missing or null number becomes NaN (0 for counts).
Summary summary_from_json(const nlohmann::json& j);

// Reads DIR/summary.json. Fails with the path when it is missing or not JSON.
RunSummary read_run_summary(const std::string& run_dir);

// A number at a dotted path ("ttft_ms.p90"); NaN when absent, null or not a number.
double json_number_at(const nlohmann::json& j, const std::string& dotted_path);

nlohmann::json read_json_file(const std::string& path);

// The last component of a directory path, trailing slashes ignored ("runs/c16/" gives "c16").
std::string dir_display_name(const std::string& dir);

}  // namespace paceline::bench
