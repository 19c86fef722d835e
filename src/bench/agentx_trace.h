#pragma once
// AgentX session files (the kv-cache-tester / Weka format): one recorded agentic coding session
// per JSON file, with subagents as nested request lists. The format is described in
// ../shared/traces/README.md; this reader keeps every field and checks the ones replay relies on.
//
// Times: a request's `t` is seconds since the start of the list it sits in (the session, or the
// subagent for a subagent's own requests). A subagent entry's `t` is when its result came back
// (the traces place it in time order by that moment, and `t - duration_ms/1000` lands right after
// the spawning turn ended), so `start_s()` and `end_s()` below name both ends explicitly.
//
// Background subagents (status "async_launched") are the exception: the parent went on at once,
// so their entry's `t` is the launch, and duration_ms, total_tokens and tool_use_count are null.
// Replay starts them at `t` and no parent turn waits for them.
//
// A file the reader cannot use is skipped with a warning that names file, entry and field (and
// counted), unless the caller asks for strict reading, where the first such file is an error.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace paceline::bench {

struct AgentxRequest {
  double t = 0.0;    // seconds since the start of the enclosing session or subagent
  std::string type;  // "n" or "s"
  std::string model;
  int64_t in = 0;                 // input tokens
  int64_t out = 0;                // output tokens
  std::vector<int64_t> hash_ids;  // one per full block of the input
  std::vector<std::string> input_types;
  std::vector<std::string> output_types;
  std::string stop;
  std::optional<double> api_time;    // seconds the original call took; absent on some "s" turns
  std::optional<double> think_time;  // the recorder's own gap estimate; replay recomputes it
  std::optional<double> ttft;

  // Recorded end of the call; a missing api_time counts as zero, as the recorder itself did.
  double end_s() const { return t + api_time.value_or(0.0); }
};

inline constexpr const char* kAsyncLaunched = "async_launched";

struct AgentxSubagent {
  double t = 0.0;  // when the result arrived (background: when it was launched), parent's time base
  std::string agent_id;
  std::string subagent_type;
  std::string status;                     // "completed", or "async_launched" (background)
  std::optional<int64_t> duration_ms;     // present unless background
  std::optional<int64_t> total_tokens;    // null on background subagents
  std::optional<int64_t> tool_use_count;  // null on background subagents
  std::vector<std::string> models;
  std::optional<int64_t> tool_tokens;
  std::optional<int64_t> system_tokens;
  std::vector<AgentxRequest> requests;    // times relative to start_s()
  std::vector<AgentxSubagent> subagents;  // nested subagents, if a trace ever has them

  // Nothing waits for a background subagent: it gates no parent turn.
  bool background() const { return status == kAsyncLaunched; }
  double start_s() const {
    return background() ? t : t - static_cast<double>(duration_ms.value_or(0)) / 1000.0;
  }
  // A background subagent's end is not recorded: its last call's recorded end stands in.
  double end_s() const {
    if (!background()) return t;
    return requests.empty() ? t : t + requests.back().end_s();
  }
};

struct AgentxTokenCounts {
  int64_t input = 0;
  int64_t output = 0;
};

struct AgentxTotals {
  AgentxTokenCounts parent_tokens;
  AgentxTokenCounts subagent_tokens;
  AgentxTokenCounts combined_tokens;
  int64_t subagent_count = 0;
};

struct AgentxSession {
  std::string file;  // the file name it was read from, for messages
  std::string id;
  std::vector<std::string> models;
  int64_t block_size = 0;
  std::string hash_id_scope;  // "local": ids compare only within this file
  int64_t tool_tokens = 0;
  int64_t system_tokens = 0;
  std::optional<AgentxTotals> totals;
  std::vector<AgentxRequest> requests;    // the parent's turns, in time order
  std::vector<AgentxSubagent> subagents;  // in the order the file lists them

  // Span of the parent's turns: the start time of the last one (the first starts at 0).
  double duration_s() const { return requests.empty() ? 0.0 : requests.back().t; }
};

// Parses one session; `file` names it in errors. Fails with the file and field on bad input.
AgentxSession parse_agentx_session(const nlohmann::json& doc, const std::string& file);

// A session file left out of a run, and why ("trace_0042.json: requests[66].duration_ms: ...").
struct TraceSkip {
  std::string file;
  std::string reason;
};

// Reads one .json file, or every *.json file of a directory in name order. A file that cannot be
// read or used is logged as a warning, listed in `skipped` (when given) and left out; with
// `strict`, it is an error instead. Fails when no file is left.
std::vector<AgentxSession> load_agentx(const std::string& path, bool strict = false,
                                       std::vector<TraceSkip>* skipped = nullptr);

}  // namespace paceline::bench
