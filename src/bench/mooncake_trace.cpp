#include "bench/mooncake_trace.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <unordered_set>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "bench/json_fields.h"

namespace paceline::bench {

MooncakeRecord parse_mooncake_line(const std::string& line, const std::string& where) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(line);
  } catch (const nlohmann::json::exception& e) {  // parse_error, or out_of_range for 1e999
    fail("{}: not valid JSON: {}", where, e.what());
  }
  JsonFields f(doc, where);
  MooncakeRecord r;
  r.timestamp_ms = f.optional_number("timestamp");
  r.input_length = f.integer("input_length");
  r.output_length = f.integer("output_length");
  r.hash_ids = f.integers("hash_ids");
  if (f.has("session_id")) {
    const auto& v = doc["session_id"];
    if (v.is_string()) {
      r.session_id = v.get<std::string>();
    } else if (v.is_number_integer()) {
      r.session_id = std::to_string(v.get<int64_t>());
    } else {
      f.fail_field("session_id", "expected a string or an integer");
    }
  }
  r.delay_ms = f.optional_number("delay");
  if (r.timestamp_ms && !(std::isfinite(*r.timestamp_ms) && *r.timestamp_ms >= 0)) {
    f.fail_field("timestamp", "must be a time in ms >= 0");
  }
  if (r.input_length < 0) f.fail_field("input_length", "is negative");
  if (r.output_length < 0) f.fail_field("output_length", "is negative");
  if (r.delay_ms && !(*r.delay_ms >= 0)) f.fail_field("delay", "must be >= 0");
  return r;
}

std::vector<MooncakeRecord> load_mooncake(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail("{}: cannot open", path);
  std::string name = std::filesystem::path(path).filename().string();
  std::vector<MooncakeRecord> records;
  std::unordered_set<std::string> sessions_seen;
  std::string line;
  int64_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    std::string where = fmt::format("{}:{}", name, line_no);
    MooncakeRecord r = parse_mooncake_line(line, where);
    r.line = line_no;
    bool continues = r.session_id && sessions_seen.count(*r.session_id) > 0;
    if (!r.timestamp_ms && !(continues && r.delay_ms)) {
      fail("{}: timestamp: missing (only a session's later turn with a delay may omit it)", where);
    }
    if (r.session_id) sessions_seen.insert(*r.session_id);
    records.push_back(std::move(r));
  }
  if (records.empty()) fail("{}: no records", path);
  return records;
}

}  // namespace paceline::bench
