// The bundled AgentX traces replay end to end in virtual time: an hour of 32 lanes, with the
// default start window, warmup and idle caps, finishes in moments and keeps every rule's promise.
#include <gtest/gtest.h>

#include <map>

#include "bench/summary.h"
#include "bundled_traces.h"
#include "replay_harness.h"

namespace paceline::bench {
namespace {

using namespace test_util;

TEST(RealTraces, AnHourOfThirtyTwoLanesInVirtualTime) {
  const std::vector<AgentxSession>& sessions = bundled_agentx_sessions();
  SessionReplayConfig config;  // the defaults: window 0.25-0.75, 10 warmups, caps 300 s / 10 s
  config.concurrency = 32;
  config.sampler = SamplerKind::kShuffle;
  config.seed = 42;
  config.duration_ns = 3600 * kSec;
  ReplayRun r(sessions, config, [](const RequestSpec& spec) {
    Reply reply;
    reply.ttft_ns = 50 * kMs + spec.isl * 2'000;  // 2 us per prompt token
    reply.itl_ns = 20 * kMs;
    reply.cached_tokens = spec.isl / 2;
    return reply;
  });
  r.run();
  ASSERT_FALSE(r.replayer.abort_reason());
  Summary s = summarize(r.records(), SummaryOptions{});
  EXPECT_TRUE(s.valid);
  EXPECT_EQ(s.warmup_requests, 32 * 11);  // every first play starts past turn 0: a primer each
  EXPECT_GT(s.requests_completed, 1000);
  EXPECT_EQ(s.requests_failed, 0);
  EXPECT_DOUBLE_EQ(s.itl_ms.p50, 20);
  EXPECT_GT(s.trace_prefix_hit, 0.8);  // agentic sessions re-send their context
  std::map<std::string, int> subagent_requests;
  for (const auto& rec : r.records()) {
    if (rec.stream > 0) ++subagent_requests[rec.agent];
    if (rec.phase == Phase::kProfiling) {
      EXPECT_GE(rec.start_ns, *r.replayer.profiling_start_ns());
      EXPECT_LE(rec.start_ns, *r.replayer.profiling_start_ns() + config.duration_ns);
    }
  }
  EXPECT_FALSE(subagent_requests.empty());
  EXPECT_GT(r.transport.max_in_flight(), 0);
  EXPECT_LE(r.transport.max_in_flight(), 32 + 32 * 4);
}

}  // namespace
}  // namespace paceline::bench
