#include "bench/session_plan.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "bench/wait_ns.h"

namespace paceline::bench {

int64_t gap_to_wait_ns(double gap_s, int64_t cap_ns) {
  const int64_t ns = wait_ns_from(gap_s * 1e9);
  return cap_ns > 0 ? std::min(ns, cap_ns) : ns;
}

int choose_start_turn(const AgentxSession& session, double u, double lo, double hi) {
  if (!(0 <= lo && lo <= hi && hi <= 1)) {
    fail("--start-window {},{}: need 0 <= lo <= hi <= 1", lo, hi);
  }
  const auto& turns = session.requests;
  double t_star = (lo + (hi - lo) * u) * session.duration_s();
  int last = static_cast<int>(turns.size()) - 1;
  for (int k = 0; k < last; ++k) {
    if (turns[k].t >= t_star) return k;
  }
  return last;
}

namespace {

// Adds the stream for `requests` from recorded position `first` on, then its subagents, each as a
// child stream (recursively). Times of `requests` and `subagents` share one origin.
int add_stream(SessionPlan& plan, const std::vector<AgentxRequest>& requests,
               const std::vector<AgentxSubagent>& subagents, int first, int parent, int spawn_turn,
               int64_t start_gap_ns, const std::string& agent_id, int64_t cap_ns) {
  int id = static_cast<int>(plan.streams.size());
  {
    PlannedStream s;
    s.parent = parent;
    s.spawn_turn = spawn_turn;
    s.start_gap_ns = start_gap_ns;
    s.agent_id = agent_id;
    for (int k = first; k < static_cast<int>(requests.size()); ++k) {
      s.turns.push_back(PlannedTurn{&requests[k], k, 0, {}});
    }
    plan.streams.push_back(std::move(s));
  }
  // Positions in this stream's `turns` are recorded index - first.
  std::vector<double> join_end(plan.streams[id].turns.size(), -1.0);
  for (const AgentxSubagent& sub : subagents) {
    int spawn = -1;  // recorded index of the spawning turn
    for (int k = 0; k < static_cast<int>(requests.size()); ++k) {
      if (requests[k].t <= sub.start_s()) spawn = k;
    }
    if (spawn < first && !(spawn < 0 && first == 0)) continue;  // spawned before this play began
    int spawn_pos = spawn < 0 ? -1 : spawn - first;
    double spawn_end = spawn < 0 ? 0.0 : requests[spawn].end_s();
    int64_t wait = gap_to_wait_ns(sub.start_s() - spawn_end, cap_ns);
    int child =
        add_stream(plan, sub.requests, sub.subagents, 0, id, spawn_pos, wait, sub.agent_id, cap_ns);
    plan.streams[id].children.push_back(child);
    if (sub.background()) continue;  // launched and left to run: no turn waits for it
    auto& turns = plan.streams[id].turns;
    for (int p = spawn_pos + 1; p < static_cast<int>(turns.size()); ++p) {
      if (turns[p].request->t >= sub.end_s()) {
        turns[p].joins.push_back(child);
        join_end[p] = std::max(join_end[p], sub.end_s());
        break;
      }
    }
  }
  auto& turns = plan.streams[id].turns;
  for (size_t p = 0; p < turns.size(); ++p) {
    if (p == 0) {
      // Stream 0 goes at once; a child's first turn waits its offset from the child's start.
      turns[p].gap_ns = parent < 0 ? 0 : gap_to_wait_ns(turns[p].request->t, cap_ns);
      continue;
    }
    double dep_end = std::max(turns[p - 1].request->end_s(), join_end[p]);
    turns[p].gap_ns = gap_to_wait_ns(turns[p].request->t - dep_end, cap_ns);
  }
  return id;
}

}  // namespace

SessionPlan plan_session(const AgentxSession& session, int start_turn, int64_t idle_gap_cap_ns) {
  int n = static_cast<int>(session.requests.size());
  if (start_turn < 0 || start_turn >= n) {
    fail("{}: start turn {} is outside the session's {} turns", session.file, start_turn, n);
  }
  SessionPlan plan;
  plan.session = &session;
  plan.start_turn = start_turn;
  plan.primer_turn = start_turn - 1;
  add_stream(plan, session.requests, session.subagents, start_turn, -1, -1, 0, "", idle_gap_cap_ns);
  return plan;
}

}  // namespace paceline::bench
