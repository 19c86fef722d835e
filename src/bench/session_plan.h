#pragma once
// How one play of a session tree unfolds, worked out before it starts: which turns it sends, how
// long each waits after what it depends on, where subagent streams start and where the parent
// joins them. The replayer only follows this plan; the timing rules live here.
//
// Rules (../shared/specs/agentx-replay.md):
// - Think time is end to start: a turn waits max(0, t_k - end of its last dependency) after that
//   dependency completed, where a dependency's recorded end is t + api_time for a turn and the
//   subagent's `t` for a joined subagent. With no subagent this is t_k - (t_{k-1} + api_{k-1}).
// - Every such wait is cut to the per-session idle gap cap (300 s by default).
// - A subagent starts after its spawning turn (the last turn of its parent stream that began at or
//   before the subagent's start) completed, waiting its recorded start minus that turn's recorded
//   end; the first parent turn at or after the subagent's recorded end waits for it (join).
// - A background subagent (async_launched) starts the same way at its `t` and is joined by no
//   turn; the play still ends only when it has drained.
// - A play that begins at a later turn (the start window) drops subagents spawned before it.
#include <cstdint>
#include <string>
#include <vector>

#include "bench/agentx_trace.h"

namespace paceline::bench {

struct PlannedTurn {
  const AgentxRequest* request = nullptr;  // points into the session, which outlives the plan
  int index = 0;                           // position in the stream's recorded request list
  int64_t gap_ns = 0;                      // wait after the last dependency completed
  std::vector<int> joins;  // child streams that must have finished before this turn is sent
};

struct PlannedStream {
  int parent = -1;           // index of the parent stream; -1 for stream 0
  int spawn_turn = -1;       // position in the parent's `turns` whose completion starts this one
  int64_t start_gap_ns = 0;  // wait after the spawning turn completed
  std::string agent_id;      // empty for stream 0
  std::vector<PlannedTurn> turns;
  std::vector<int> children;  // streams spawned by this one (joined or not, they must finish)
};

struct SessionPlan {
  const AgentxSession* session = nullptr;
  int start_turn = 0;                  // recorded index of the first turn this play sends
  int primer_turn = -1;                // the turn just before it (the warmup primer), -1 when none
  std::vector<PlannedStream> streams;  // [0] = the session's own turns from start_turn on
};

// A recorded gap in seconds as a replay wait: negative gaps become 0, long ones the cap
// (cap_ns <= 0: no cap, and a gap beyond bench::kFarFutureNs waits that long).
int64_t gap_to_wait_ns(double gap_s, int64_t cap_ns);

// The start window: t* = (lo + (hi - lo) * u) * duration with u uniform in [0, 1); the first turn
// that begins at or after t*, but never past the last turn.
int choose_start_turn(const AgentxSession& session, double u, double lo, double hi);

SessionPlan plan_session(const AgentxSession& session, int start_turn, int64_t idle_gap_cap_ns);

}  // namespace paceline::bench
