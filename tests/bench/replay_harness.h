#pragma once
// One closed-loop run in virtual time: the sessions, a scripted server and the replayer, wired.
#include <string>
#include <vector>

#include "base/clock.h"
#include "bench/session_replayer.h"
#include "bench/virtual_driver.h"
#include "scripted_transport.h"

namespace paceline::bench::test_util {

// No warmup, start at turn 0, no system idle cap: the plainest timing, for focused tests.
inline SessionReplayConfig plain_config(int64_t duration_ns) {
  SessionReplayConfig c;
  c.concurrency = 1;
  c.start_window_lo = 0;
  c.start_window_hi = 0;
  c.warmup_requests_per_lane = 0;
  c.system_idle_gap_cap_ns = 0;
  c.duration_ns = duration_ns;
  c.drain_timeout_ns = 1000 * kSec;
  return c;
}

struct ReplayRun {
  ReplayRun(const std::vector<AgentxSession>& sessions, SessionReplayConfig config,
            Script script = nullptr)
      : transport(clock, std::move(script)), replayer(sessions, config, transport) {}

  ReplayRun& run() {
    run_virtual(replayer, transport, clock);
    return *this;
  }

  const std::vector<RequestRecord>& records() const { return replayer.log().records(); }

  std::vector<RequestRecord> phase(Phase p) const {
    std::vector<RequestRecord> out;
    for (const auto& r : records()) {
      if (r.phase == p) out.push_back(r);
    }
    return out;
  }

  VirtualClock clock;
  ScriptedTransport transport;
  SessionReplayer replayer;
};

}  // namespace paceline::bench::test_util
