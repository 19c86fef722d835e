// libFuzzer target over the AgentX session reader and what the replayer builds from a session:
// its play plan (from a start turn the input picks) and the --isl-scale/--max-isl transform.
// Properties: a file either loads or throws paceline::Error; the plan sends every turn from the
// start turn on, never waits a negative time, and its streams form a tree; the transform keeps no
// request over --max-isl. UBSan makes any overflow on hostile numbers a crash.
// Built and run by scripts/fuzz.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "bench/agentx_trace.h"
#include "bench/session_plan.h"
#include "bench/trace_transform.h"
#include "fuzz/fuzz_check.h"

namespace {

using namespace paceline;
using namespace paceline::bench;
using paceline::fuzz::require;

constexpr int64_t kIdleGapCapNs = 300'000'000'000;

void check_plan(const AgentxSession& session, double u) {
  int start = choose_start_turn(session, u, 0.0, 1.0);
  require(start >= 0 && start < static_cast<int>(session.requests.size()), "start turn outside");
  SessionPlan plan = plan_session(session, start, kIdleGapCapNs);
  require(!plan.streams.empty(), "a plan without its session's stream");
  require(plan.streams[0].turns.size() == session.requests.size() - start, "turns went missing");
  for (size_t i = 0; i < plan.streams.size(); ++i) {
    const PlannedStream& stream = plan.streams[i];
    require(i == 0 ? stream.parent == -1 : stream.parent >= 0 && stream.parent < int(i),
            "streams do not form a tree");
    require(stream.start_gap_ns >= 0 && stream.start_gap_ns <= kIdleGapCapNs, "bad start gap");
    for (const PlannedTurn& turn : stream.turns) {
      require(turn.gap_ns >= 0 && turn.gap_ns <= kIdleGapCapNs, "bad think gap");
      for (int child : turn.joins) {
        require(child > int(i) && child < int(plan.streams.size()), "joins an unknown stream");
      }
    }
  }
}

void check_requests_fit(const std::vector<AgentxRequest>& requests,
                        const std::vector<AgentxSubagent>& subagents, int64_t max_isl) {
  for (const AgentxRequest& r : requests) require(r.in <= max_isl, "kept a request over max-isl");
  for (const AgentxSubagent& s : subagents) check_requests_fit(s.requests, s.subagents, max_isl);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  double u = data[0] / 256.0;  // the start window's draw
  std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return 0;
  AgentxSession session;
  try {
    session = parse_agentx_session(doc, "fuzz.json");
  } catch (const Error&) {
    return 0;
  }
  check_plan(session, u);
  TraceTransform transform{0.25, 0.5, 4096};
  std::vector<AgentxSession> kept;
  try {
    kept = transform_sessions({session}, transform);
  } catch (const Error&) {
    return 0;  // the session's first turn is over --max-isl: the user's error, named
  }
  for (const AgentxSession& s : kept) {
    check_requests_fit(s.requests, s.subagents, 4096);
    check_plan(s, u);
  }
  return 0;
}
