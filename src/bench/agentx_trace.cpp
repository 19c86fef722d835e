#include "bench/agentx_trace.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "base/error.h"
#include "base/log.h"
#include "bench/json_fields.h"

namespace paceline::bench {

namespace {

// Far above any KV block size (16 to 512 tokens in practice); larger values are typos or attacks,
// and would overflow the block arithmetic of the replayer and the transforms.
constexpr int64_t kMaxBlockSize = int64_t{1} << 20;

AgentxRequest parse_request(const JsonFields& f, int64_t block_size) {
  AgentxRequest r;
  r.t = f.number("t");
  r.type = f.string("type");
  r.model = f.string("model");
  r.in = f.integer("in");
  r.out = f.integer("out");
  r.hash_ids = f.integers("hash_ids");
  r.input_types = f.strings("input_types");
  r.output_types = f.strings("output_types");
  r.stop = f.string("stop");
  r.api_time = f.optional_number("api_time");
  r.think_time = f.optional_number("think_time");
  r.ttft = f.optional_number("ttft");

  if (!std::isfinite(r.t) || r.t < 0) f.fail_field("t", fmt::format("{} is not a time >= 0", r.t));
  if (r.in < 0) f.fail_field("in", fmt::format("{} is negative", r.in));
  if (r.out < 0) f.fail_field("out", fmt::format("{} is negative", r.out));
  if (r.api_time && !(*r.api_time >= 0)) f.fail_field("api_time", "must be >= 0");
  if (r.ttft && !(*r.ttft >= 0)) f.fail_field("ttft", "must be >= 0");
  // The recorder hashes full blocks only (floor); accept ceil too, for traces that hash the tail.
  // (Ceil without in + block_size - 1, which overflows for a hostile `in`.)
  int64_t full = r.in / block_size;
  int64_t all = full + (r.in % block_size != 0 ? 1 : 0);
  auto n = static_cast<int64_t>(r.hash_ids.size());
  if (n != full && n != all) {
    f.fail_field("hash_ids",
                 fmt::format("{} ids for in={} with block_size {}: expected {}{}", n, r.in,
                             block_size, full, full == all ? "" : fmt::format(" or {}", all)));
  }
  return r;
}

AgentxTokenCounts parse_counts(const JsonFields& totals, std::string_view key) {
  JsonFields f(totals.object(key), totals.path(key));
  return {f.integer("input"), f.integer("output")};
}

// Fills `requests` and `subagents` from a list, checking that times never go back.
template <typename Owner>
void parse_entries(const JsonFields& owner_fields, Owner& owner, int64_t block_size) {
  const auto& list = owner_fields.array("requests");
  std::string list_path = owner_fields.path("requests");
  double last_t = 0.0;
  for (size_t i = 0; i < list.size(); ++i) {
    JsonFields f(list[i], fmt::format("{}[{}]", list_path, i));
    double t = f.number("t");
    if (t < last_t) {
      f.fail_field("t", fmt::format("{} is earlier than the previous entry's {}", t, last_t));
    }
    last_t = t;
    if (f.string("type") != "subagent") {
      owner.requests.push_back(parse_request(f, block_size));
      continue;
    }
    AgentxSubagent s;
    s.t = t;
    s.agent_id = f.string("agent_id");
    s.subagent_type = f.string("subagent_type");
    s.status = f.string("status");
    s.duration_ms = f.optional_integer("duration_ms");
    s.total_tokens = f.optional_integer("total_tokens");
    s.tool_use_count = f.optional_integer("tool_use_count");
    s.models = f.has("models") || !s.background() ? f.strings("models") : s.models;
    s.tool_tokens = f.optional_integer("tool_tokens");
    s.system_tokens = f.optional_integer("system_tokens");
    if (!s.duration_ms && !s.background()) {
      // Without its duration a joined subagent has no start: replay cannot place it.
      f.fail_field("duration_ms", fmt::format("null on a subagent with status '{}' (only {} "
                                              "subagents run in the background without one)",
                                              s.status, kAsyncLaunched));
    }
    if (s.duration_ms && *s.duration_ms < 0) f.fail_field("duration_ms", "is negative");
    // A background subagent's own calls may not have been recorded.
    if (f.has("requests") || !s.background()) parse_entries(f, s, block_size);
    owner.subagents.push_back(std::move(s));
  }
}

}  // namespace

AgentxSession parse_agentx_session(const nlohmann::json& doc, const std::string& file) {
  JsonFields f(doc, file);
  AgentxSession s;
  s.file = file;
  s.id = f.string("id");
  s.models = f.strings("models");
  s.block_size = f.integer("block_size");
  if (s.block_size <= 0 || s.block_size > kMaxBlockSize) {
    f.fail_field("block_size", fmt::format("{} is not in [1, {}]", s.block_size, kMaxBlockSize));
  }
  s.hash_id_scope = f.string("hash_id_scope");
  s.tool_tokens = f.integer("tool_tokens");
  s.system_tokens = f.integer("system_tokens");
  if (f.has("totals")) {
    JsonFields t(f.object("totals"), f.path("totals"));
    s.totals = AgentxTotals{parse_counts(t, "parent_tokens"), parse_counts(t, "subagent_tokens"),
                            parse_counts(t, "combined_tokens"), t.integer("subagent_count")};
  }
  parse_entries(f, s, s.block_size);
  if (s.requests.empty()) f.fail_field("requests", "the session has no requests of its own");
  return s;
}

namespace {

AgentxSession read_session_file(const std::filesystem::path& p) {
  std::ifstream in(p);
  if (!in) fail("{}: cannot open", p.string());
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {  // parse_error, or out_of_range for 1e999
    fail("{}: not valid JSON: {}", p.string(), e.what());
  }
  return parse_agentx_session(doc, p.filename().string());
}

}  // namespace

std::vector<AgentxSession> load_agentx(const std::string& path, bool strict,
                                       std::vector<TraceSkip>* skipped) {
  namespace fs = std::filesystem;
  std::vector<fs::path> files;
  if (fs::is_directory(path)) {
    for (const auto& e : fs::directory_iterator(path)) {
      if (e.is_regular_file() && e.path().extension() == ".json") files.push_back(e.path());
    }
    std::sort(files.begin(), files.end());
    if (files.empty()) fail("{}: no .json session files in this directory", path);
  } else {
    files.emplace_back(path);
  }
  std::vector<AgentxSession> sessions;
  sessions.reserve(files.size());
  size_t left_out = 0;
  for (const auto& p : files) {
    try {
      sessions.push_back(read_session_file(p));
    } catch (const Error& e) {
      if (strict) throw;
      ++left_out;
      spdlog::warn("traces: skipped {} (--strict makes this an error): {}", p.filename().string(),
                   e.what());
      if (skipped) skipped->push_back({p.filename().string(), e.what()});
    }
  }
  if (sessions.empty()) {
    fail("{}: none of its {} session files could be used (every one skipped; see the warnings)",
         path, left_out);
  }
  return sessions;
}

}  // namespace paceline::bench
