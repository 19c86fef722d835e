#pragma once
// Small hand-made AgentX sessions for replay tests: turns at chosen times with chosen api_time.
#include <cstdint>
#include <string>
#include <vector>

#include "bench/agentx_trace.h"

namespace paceline::bench::test_util {

inline AgentxRequest turn(double t, double api_time, int64_t in = 640, int64_t out = 1,
                          int64_t first_id = 1) {
  AgentxRequest r;
  r.t = t;
  r.type = "n";
  r.model = "test-model";
  r.in = in;
  r.out = out;
  for (int64_t i = 0; i < in / 64; ++i) r.hash_ids.push_back(first_id + i);
  r.api_time = api_time;
  return r;
}

// A subagent that started at `start` and ended at `end` (the parent's time base).
inline AgentxSubagent subagent(std::string agent_id, double start, double end,
                               std::vector<AgentxRequest> requests) {
  AgentxSubagent s;
  s.t = end;
  s.agent_id = std::move(agent_id);
  s.subagent_type = "Explore";
  s.status = "completed";
  s.duration_ms = static_cast<int64_t>((end - start) * 1000.0 + 0.5);
  s.requests = std::move(requests);
  return s;
}

// A background subagent (status async_launched), launched at `launch` with nothing recorded
// about when it ended, as the public AgentX corpus has them.
inline AgentxSubagent background_subagent(std::string agent_id, double launch,
                                          std::vector<AgentxRequest> requests) {
  AgentxSubagent s;
  s.t = launch;
  s.agent_id = std::move(agent_id);
  s.subagent_type = "general-purpose";
  s.status = kAsyncLaunched;
  s.requests = std::move(requests);
  return s;
}

inline AgentxSession session(std::string id, std::vector<AgentxRequest> requests,
                             std::vector<AgentxSubagent> subagents = {}) {
  AgentxSession s;
  s.file = id + ".json";
  s.id = std::move(id);
  s.block_size = 64;
  s.hash_id_scope = "local";
  s.requests = std::move(requests);
  s.subagents = std::move(subagents);
  return s;
}

}  // namespace paceline::bench::test_util
