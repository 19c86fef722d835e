#pragma once
// Shrinking a trace to fit small hardware, without changing its shape: --isl-scale and
// --osl-scale multiply every input and output length (and rebuild the prefix blocks so that
// shared prefixes stay shared in the same proportion), --max-isl drops requests whose (scaled)
// input is longer. A transformed run is not a full run: the settings and the table header say so.
//
// --max-isl on sessions: a session's context only grows, so a turn over the limit is followed by
// more of them. The session is cut before its first turn over the limit (later turns and the
// subagents spawned from them go too); a session whose first turn is over the limit is skipped.
// Subagents are cut the same way. On Mooncake records each record is kept or dropped alone.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/agentx_trace.h"
#include "bench/mooncake_trace.h"

namespace paceline::bench {

struct TraceTransform {
  double isl_scale = 1.0;
  double osl_scale = 1.0;
  std::optional<int64_t> max_isl;  // applied to the scaled input length

  bool identity() const { return isl_scale == 1.0 && osl_scale == 1.0 && !max_isl; }
};

// What a transform did, for the settings and the log.
struct TransformStats {
  int64_t requests_in = 0;
  int64_t requests_kept = 0;
  int64_t sessions_in = 0;  // AgentX only
  int64_t sessions_kept = 0;
  int64_t sessions_cut = 0;  // kept, but with turns dropped at the end
};

// A length times `scale`, rounded; a positive length never becomes 0.
int64_t scale_length(int64_t length, double scale);

// The prefix-block ids of a request whose input of `ids.size()`-ish blocks was scaled by `scale`
// to `scaled_isl` tokens. Scaled block j stands for the recorded tokens it was shrunk from; its id
// mixes j with the ids of the recorded blocks under it, so two requests share scaled block j
// exactly when they shared all of those. Blocks not fully covered by recorded ids are left out.
std::vector<int64_t> scale_hash_ids(const std::vector<int64_t>& ids, int64_t block_size,
                                    int64_t scaled_isl, double scale);

std::vector<AgentxSession> transform_sessions(const std::vector<AgentxSession>& sessions,
                                              const TraceTransform& transform,
                                              TransformStats* stats = nullptr);

std::vector<MooncakeRecord> transform_records(const std::vector<MooncakeRecord>& records,
                                              const TraceTransform& transform, int64_t block_size,
                                              TransformStats* stats = nullptr);

// "isl x0.002, osl x0.02, max isl 4096", or "none".
std::string describe_transform(const TraceTransform& transform);
// For summary.json's settings: the factors, the limit and what they removed.
nlohmann::json transform_json(const TraceTransform& transform, const TransformStats& stats);

}  // namespace paceline::bench
