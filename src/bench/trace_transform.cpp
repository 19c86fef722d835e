#include "bench/trace_transform.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "base/error.h"
#include "bench/rng.h"

namespace paceline::bench {

namespace {

void check(const TraceTransform& t) {
  if (!(t.isl_scale > 0) || !std::isfinite(t.isl_scale)) {
    fail("--isl-scale must be a positive number, got {}", t.isl_scale);
  }
  if (!(t.osl_scale > 0) || !std::isfinite(t.osl_scale)) {
    fail("--osl-scale must be a positive number, got {}", t.osl_scale);
  }
  if (t.max_isl && *t.max_isl < 1) fail("--max-isl must be at least 1, got {}", *t.max_isl);
}

void scale_request(AgentxRequest& r, int64_t block_size, const TraceTransform& t) {
  int64_t in = scale_length(r.in, t.isl_scale);
  if (t.isl_scale != 1.0) r.hash_ids = scale_hash_ids(r.hash_ids, block_size, in, t.isl_scale);
  r.in = in;
  r.out = scale_length(r.out, t.osl_scale);
}

bool too_long(int64_t isl, const TraceTransform& t) {
  return t.max_isl && isl > *t.max_isl;
}

// Scales the list and cuts it before its first request over the limit; subagents that start at
// or after the cut go with it. Returns false when nothing is left.
bool transform_list(std::vector<AgentxRequest>& requests, std::vector<AgentxSubagent>& subagents,
                    int64_t block_size, const TraceTransform& t, TransformStats& stats, bool& cut) {
  stats.requests_in += static_cast<int64_t>(requests.size());
  size_t keep = requests.size();
  for (size_t k = 0; k < requests.size(); ++k) {
    scale_request(requests[k], block_size, t);
    if (too_long(requests[k].in, t)) {
      keep = k;
      break;
    }
  }
  if (keep < requests.size()) {
    cut = true;
    const double cut_t = requests[keep].t;
    std::erase_if(subagents, [&](const AgentxSubagent& s) { return s.start_s() >= cut_t; });
    requests.resize(keep);
  }
  stats.requests_kept += static_cast<int64_t>(requests.size());
  std::erase_if(subagents, [&](AgentxSubagent& s) {
    bool sub_cut = false;
    return !transform_list(s.requests, s.subagents, block_size, t, stats, sub_cut);
  });
  return !requests.empty();
}

}  // namespace

int64_t scale_length(int64_t length, double scale) {
  if (length <= 0) return length;
  return std::max<int64_t>(1, std::llround(static_cast<double>(length) * scale));
}

std::vector<int64_t> scale_hash_ids(const std::vector<int64_t>& ids, int64_t block_size,
                                    int64_t scaled_isl, double scale) {
  std::vector<int64_t> out;
  if (block_size <= 0 || ids.empty()) return out;
  const auto n = static_cast<int64_t>(ids.size());
  const auto recorded_end = static_cast<double>(n);  // in blocks
  for (int64_t j = 0; j * block_size < scaled_isl; ++j) {
    // Scaled block j covers recorded blocks [j / scale, (j + 1) / scale); the tolerance keeps
    // boundaries such as 12 / 0.02 on the integer they mean.
    constexpr double kTolerance = 1e-9;
    const double lo = static_cast<double>(j) / scale;
    const double hi = static_cast<double>(j + 1) / scale;
    if (hi > recorded_end + kTolerance) break;
    auto a = static_cast<int64_t>(std::floor(lo + kTolerance));
    int64_t b = std::min(n - 1, static_cast<int64_t>(std::ceil(hi - kTolerance)) - 1);
    uint64_t key = mix_keys(0x5ca1eULL, static_cast<uint64_t>(j));
    for (int64_t i = a; i <= std::max(a, b); ++i) {
      key = mix_keys(key, static_cast<uint64_t>(ids[i]));
    }
    out.push_back(static_cast<int64_t>(key >> 2));
  }
  return out;
}

std::vector<AgentxSession> transform_sessions(const std::vector<AgentxSession>& sessions,
                                              const TraceTransform& t, TransformStats* stats) {
  check(t);
  TransformStats local;
  std::vector<AgentxSession> out;
  for (const AgentxSession& session : sessions) {
    ++local.sessions_in;
    AgentxSession s = session;
    bool cut = false;
    if (!transform_list(s.requests, s.subagents, s.block_size, t, local, cut)) continue;
    ++local.sessions_kept;
    if (cut) ++local.sessions_cut;
    out.push_back(std::move(s));
  }
  if (out.empty() && !sessions.empty()) {
    fail("--max-isl {}: every session's first turn is longer; nothing is left to replay",
         t.max_isl.value_or(0));
  }
  if (stats) *stats = local;
  return out;
}

std::vector<MooncakeRecord> transform_records(const std::vector<MooncakeRecord>& records,
                                              const TraceTransform& t, int64_t block_size,
                                              TransformStats* stats) {
  check(t);
  TransformStats local;
  std::vector<MooncakeRecord> out;
  for (const MooncakeRecord& record : records) {
    ++local.requests_in;
    MooncakeRecord r = record;
    int64_t in = scale_length(r.input_length, t.isl_scale);
    if (too_long(in, t)) continue;
    if (t.isl_scale != 1.0) r.hash_ids = scale_hash_ids(r.hash_ids, block_size, in, t.isl_scale);
    r.input_length = in;
    r.output_length = scale_length(r.output_length, t.osl_scale);
    out.push_back(std::move(r));
  }
  local.requests_kept = static_cast<int64_t>(out.size());
  if (out.empty() && !records.empty()) {
    fail("--max-isl {}: every record is longer; nothing is left to replay", t.max_isl.value_or(0));
  }
  if (stats) *stats = local;
  return out;
}

std::string describe_transform(const TraceTransform& t) {
  if (t.identity()) return "none";
  std::string out;
  auto add = [&](const std::string& part) { out += (out.empty() ? "" : ", ") + part; };
  if (t.isl_scale != 1.0) add(fmt::format("isl x{}", t.isl_scale));
  if (t.osl_scale != 1.0) add(fmt::format("osl x{}", t.osl_scale));
  if (t.max_isl) add(fmt::format("max isl {}", *t.max_isl));
  return out;
}

nlohmann::json transform_json(const TraceTransform& t, const TransformStats& s) {
  return {
      {"scaled", !t.identity()},
      {"description", describe_transform(t)},
      {"isl_scale", t.isl_scale},
      {"osl_scale", t.osl_scale},
      {"max_isl", t.max_isl ? nlohmann::json(*t.max_isl) : nlohmann::json(nullptr)},
      {"requests_in", s.requests_in},
      {"requests_kept", s.requests_kept},
      {"sessions_in", s.sessions_in},
      {"sessions_kept", s.sessions_kept},
      {"sessions_cut", s.sessions_cut},
  };
}

}  // namespace paceline::bench
