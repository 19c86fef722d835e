#pragma once
// Mooncake JSONL traces: one request per line with an open-loop arrival time. AIPerf's extension
// fields `session_id` and `delay` turn records into multi-turn sessions (a later turn waits for the
// previous one and then `delay` ms). Format: ../shared/traces/README.md.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace paceline::bench {

inline constexpr int64_t kMooncakeBlockSize = 512;

struct MooncakeRecord {
  // ms since the trace start; absent only on a session's later turns that give a delay instead.
  std::optional<double> timestamp_ms;
  int64_t input_length = 0;
  int64_t output_length = 0;
  std::vector<int64_t> hash_ids;  // chained prefix-block hashes, kMooncakeBlockSize tokens a block
  std::optional<std::string> session_id;
  std::optional<double> delay_ms;
  int64_t line = 0;  // 1-based line number in its file
};

// Parses one line; `where` is "file:line" for errors.
MooncakeRecord parse_mooncake_line(const std::string& line, const std::string& where);

// Reads a whole file (blank lines skipped).
std::vector<MooncakeRecord> load_mooncake(const std::string& path);

}  // namespace paceline::bench
