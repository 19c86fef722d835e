#pragma once
// The run's files and its line in the Markdown table: records.jsonl (one line per request),
// summary.json (every metric plus the run's settings), summary.csv (one header, one row) and the
// seed-style Markdown table. Values that do not exist (no samples, no usage) are null in JSON and
// empty in CSV; an invalid run says so before the table.
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/record.h"
#include "bench/summary.h"

namespace paceline::bench {

// `run_start_unix_s`: the wall-clock time (s since the Unix epoch) of the run's start, for a real
// run; it adds absolute times (scheduled_unix_s, start_unix_s, first_token_unix_s, end_unix_s)
// to the run-relative ones, so records line up with server logs and /metrics. A simulated run
// has no wall clock and passes nullopt.
nlohmann::json record_to_json(const RequestRecord& record, bool with_chunks,
                              std::optional<double> run_start_unix_s = std::nullopt);
void write_records_jsonl(std::ostream& out, const std::vector<RequestRecord>& records,
                         bool with_chunks = true,
                         std::optional<double> run_start_unix_s = std::nullopt);

// `settings`: the run's options as the CLI wants them shown (URL, concurrency, trace, scaling...).
nlohmann::json summary_to_json(const Summary& summary, const nlohmann::json& settings);
void write_summary_csv(std::ostream& out, const Summary& summary);

// One row of the seed-style table.
struct MarkdownRow {
  const Summary* summary = nullptr;
  int concurrency = 0;
  std::string delayer;              // "on", "off", or empty when unknown
  std::optional<double> hold_rate;  // from the server's /metrics, when it has a delayer
};

std::string markdown_table(const std::vector<MarkdownRow>& rows);

// Writes records.jsonl, summary.json and summary.csv into `dir` (created if needed).
void write_run_files(const std::string& dir, const std::vector<RequestRecord>& records,
                     const Summary& summary, const nlohmann::json& settings,
                     std::optional<double> run_start_unix_s = std::nullopt);

}  // namespace paceline::bench
