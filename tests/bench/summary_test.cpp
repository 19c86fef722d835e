// The metrics of ../shared/specs/agentx-replay.md, from a scripted server in virtual time, against
// values worked out by hand.
#include <gtest/gtest.h>

#include <cmath>

#include "base/error.h"
#include "bench/summary.h"
#include "replay_harness.h"
#include "session_builder.h"

namespace paceline::bench {
namespace {

using namespace test_util;

// One lane, one warmup request, then three turns with no think time between them:
//   warmup   0     -> first chunk 0.100, done 0.105           (profiling starts at 0.105)
//   turn 0   0.105 -> chunks 0.205 .225 .245 .265 .285, done 0.290   TTFT 100, E2EL 180, ITL 20
//   turn 1   0.290 -> chunks 0.490 .500 .510, done 0.515             TTFT 200, E2EL 220, ITL 10
//   turn 2   0.515 -> chunk 0.815, done 0.820                        TTFT 300, E2EL 300, no ITL
// ISL 1000 + 2000 + 3000, OSL 5 + 3 + 1, cached 0 + 1000 + 2000, over 0.820 - 0.105 = 0.715 s.
ReplayRun& three_turn_run() {
  static std::vector<AgentxSession> sessions = {
      session("m", {turn(0, 1, 1000, 5), turn(1, 1, 2000, 3), turn(2, 1, 3000, 1)})};
  SessionReplayConfig config = plain_config(500 * kMs);  // stops while turn 2 runs: no recycling
  config.warmup_requests_per_lane = 1;
  static ReplayRun run(sessions, config, [](const RequestSpec& spec) {
    Reply r;
    r.done_after_ns = 5 * kMs;
    if (spec.phase == Phase::kWarmup) return r;
    r.ttft_ns = (spec.turn + 1) * 100 * kMs;
    r.itl_ns = spec.turn == 0 ? 20 * kMs : 10 * kMs;
    r.cached_tokens = spec.turn * 1000;
    return r;
  });
  static bool done = (run.run(), true);
  (void)done;
  return run;
}

Summary three_turn_summary() {
  SummaryOptions options;
  options.gpus = 2;
  options.slo = parse_slo("ttft:250 itl:15");
  return summarize(three_turn_run().records(), options);
}

TEST(Metrics, CountsExcludeTheWarmup) {
  Summary s = three_turn_summary();
  EXPECT_EQ(s.warmup_requests, 1);
  EXPECT_EQ(s.requests_completed, 3);
  EXPECT_EQ(s.requests_failed, 0);
  EXPECT_EQ(s.requests_incomplete, 0);
  EXPECT_TRUE(s.valid);
  // Three requests are too few for any tail percentile: that is the only warning.
  ASSERT_EQ(s.warnings.size(), 3u);
  for (const std::string& w : s.warnings) EXPECT_NE(w.find("percentiles rest on"), w.npos) << w;
}

TEST(Metrics, WarnsWhenAPercentileRestsOnTooFewRequests) {
  // pN needs 100 / (100 - N) samples: 3 TTFTs and E2ELs miss p75 (4), p90, p95 and p99; the two
  // ITL samples (turn 2 has one token) likewise.
  Summary s = three_turn_summary();
  EXPECT_EQ(s.warnings[0],
            "TTFT percentiles rest on 3 requests: p75 (4 needed), p90 (10 needed), p95 (20 "
            "needed), p99 (100 needed); a pN needs at least 100/(100-N) samples to be more than "
            "the largest one");
  EXPECT_EQ(s.warnings[1].substr(0, 37), "ITL percentiles rest on 2 requests: p");
  EXPECT_EQ(s.warnings[2].substr(0, 38), "E2EL percentiles rest on 3 requests: p");

  // 20 samples are enough for p95 but not p99.
  std::vector<RequestRecord> records;
  for (int i = 0; i < 20; ++i) {
    RequestRecord r = three_turn_run().records()[1];
    r.id = static_cast<uint64_t>(i);
    records.push_back(r);
  }
  Summary twenty = summarize(records, SummaryOptions{});
  ASSERT_FALSE(twenty.warnings.empty());
  EXPECT_NE(twenty.warnings[0].find("rest on 20 requests: p99 (100 needed);"), std::string::npos)
      << twenty.warnings[0];
}

TEST(Metrics, LatenciesByHand) {
  Summary s = three_turn_summary();
  // TTFT 100, 200, 300 (the warmup's 100 ms is not among them).
  EXPECT_EQ(s.ttft_ms.count, 3u);
  EXPECT_DOUBLE_EQ(s.ttft_ms.mean, 200);
  EXPECT_DOUBLE_EQ(s.ttft_ms.p50, 200);
  EXPECT_DOUBLE_EQ(s.ttft_ms.p75, 250);
  EXPECT_DOUBLE_EQ(s.ttft_ms.p90, 280);
  EXPECT_DOUBLE_EQ(s.ttft_ms.p95, 290);
  EXPECT_DOUBLE_EQ(s.ttft_ms.p99, 298);
  EXPECT_DOUBLE_EQ(s.ttft_ms.std, std::sqrt(20000.0 / 3.0));
  // E2EL 180, 220, 300: the last content chunk, not the usage chunk 5 ms later.
  EXPECT_DOUBLE_EQ(s.e2el_ms.mean, 700.0 / 3.0);
  EXPECT_DOUBLE_EQ(s.e2el_ms.p50, 220);
  EXPECT_DOUBLE_EQ(s.e2el_ms.p90, 284);  // 220 + 0.8 * 80
  // ITL (E2EL - TTFT) / (OSL - 1): (180 - 100) / 4 = 20, (220 - 200) / 2 = 10; OSL 1 has none.
  EXPECT_EQ(s.itl_ms.count, 2u);
  EXPECT_DOUBLE_EQ(s.itl_ms.mean, 15);
  EXPECT_DOUBLE_EQ(s.itl_ms.p50, 15);
  EXPECT_DOUBLE_EQ(s.itl_ms.p90, 19);
  EXPECT_DOUBLE_EQ(s.itl_ms.std, 5);
  // Chunk gaps, pooled: four of 20 ms and two of 10 ms.
  EXPECT_EQ(s.chunk_gap_ms.count, 6u);
  EXPECT_DOUBLE_EQ(s.chunk_gap_ms.mean, 100.0 / 6.0);
  EXPECT_DOUBLE_EQ(s.chunk_gap_ms.p50, 20);
}

TEST(Metrics, InteractivityInvertsTheLatencyPercentile) {
  Summary s = three_turn_summary();
  // ITL p90 = 19 ms -> 1 / 0.019 s = 52.63 tok/s/user: the slow tail, not 1 / p10.
  EXPECT_NEAR(s.interactivity.p90, 1000.0 / 19.0, 1e-9);
  EXPECT_NEAR(s.interactivity.p50, 1000.0 / 15.0, 1e-9);
  // E2EL / OSL: 36, 73.33, 300 ms; p90 = 73.33 + 0.8 * (300 - 73.33) = 254.67 ms -> 3.93 tok/s.
  double p90 = 220.0 / 3.0 + 0.8 * (300.0 - 220.0 / 3.0);
  EXPECT_NEAR(s.e2el_per_token_ms.p90, p90, 1e-9);
  EXPECT_NEAR(s.e2e_norm_interactivity.p90, 1000.0 / p90, 1e-9);
}

TEST(Metrics, ThroughputsOverTheProfilingWindow) {
  Summary s = three_turn_summary();
  EXPECT_DOUBLE_EQ(s.duration_s, 0.715);
  EXPECT_EQ(s.input_tokens, 6000);
  EXPECT_EQ(s.output_tokens, 9);
  EXPECT_DOUBLE_EQ(s.total_tok_s, 6009 / 0.715);
  EXPECT_DOUBLE_EQ(s.output_tok_s, 9 / 0.715);
  EXPECT_DOUBLE_EQ(s.input_tok_s, 6000 / 0.715);
  EXPECT_DOUBLE_EQ(s.total_tok_s_per_gpu, 6009 / 0.715 / 2);
  EXPECT_DOUBLE_EQ(s.output_tok_s_per_gpu, 9 / 0.715 / 2);
  EXPECT_DOUBLE_EQ(s.request_throughput, 3 / 0.715);
}

TEST(Metrics, GoodputCountsRequestsMeetingEveryBound) {
  Summary s = three_turn_summary();
  // ttft <= 250 and itl <= 15: turn 0 misses ITL (20), turn 2 misses TTFT (300); turn 1 meets both.
  EXPECT_EQ(s.goodput_requests, 1);
  EXPECT_DOUBLE_EQ(s.goodput, 1 / 0.715);
  Summary none = summarize(three_turn_run().records(), SummaryOptions{});
  EXPECT_TRUE(std::isnan(none.goodput));  // no --slo, no goodput
  SummaryOptions e2el;
  e2el.slo = parse_slo("e2el:250");
  EXPECT_EQ(summarize(three_turn_run().records(), e2el).goodput_requests, 2);
}

TEST(Metrics, PrefixCacheHitFromUsageAndFromTheTrace) {
  Summary s = three_turn_summary();
  EXPECT_DOUBLE_EQ(s.prefix_cache_hit, 3000.0 / 6000.0);
  // The turns' blocks are 1..15, 1..31 and 1..46: an infinite cache holds 15 and then 31 of them.
  EXPECT_DOUBLE_EQ(s.trace_prefix_hit, (15 + 31) * 64 / 6000.0);
}

// Twenty back-to-back turns of one token each; `fail_turns` answer with `status`. The last
// turn's stream stays open 10 s, so the run (5 s) stops while it drains and never recycles.
Summary twenty_turns(std::vector<int> fail_turns, int status, std::string text) {
  std::vector<AgentxRequest> turns;
  for (int i = 0; i < 20; ++i) turns.push_back(turn(0, 0));
  std::vector<AgentxSession> sessions = {session("e", turns)};
  ReplayRun r(sessions, plain_config(5 * kSec), [&](const RequestSpec& spec) {
    Reply reply;
    if (spec.turn == 19) reply.done_after_ns = 10 * kSec;
    for (int t : fail_turns) {
      if (spec.turn == t) {
        reply.error_status = status;
        reply.error_text = text;
      }
    }
    return reply;
  });
  r.run();
  return summarize(r.records(), SummaryOptions{});
}

TEST(Validity, ErrorsAreCountedAndLeftOutOfLatencies) {
  Summary s = twenty_turns({3, 9}, 500, "internal error");
  EXPECT_EQ(s.requests_completed, 18);
  EXPECT_EQ(s.requests_failed, 2);
  EXPECT_EQ(s.ttft_ms.count, 18u);
  EXPECT_DOUBLE_EQ(s.ttft_ms.max, 100);  // the failures' 50 ms never enter
  EXPECT_TRUE(s.valid);                  // 10% is not more than 10%
}

TEST(Validity, MoreThanTenPercentFailedIsInvalid) {
  Summary s = twenty_turns({1, 2, 3}, 500, "internal error");
  EXPECT_FALSE(s.valid);
  ASSERT_EQ(s.invalid_reasons.size(), 1u);
  EXPECT_EQ(s.invalid_reasons[0], "3 of 20 requests failed (15.0% > 10.0%)");
}

TEST(Validity, MoreThanOnePercentContextOverflowIsInvalid) {
  Summary s = twenty_turns({7}, 400, "This model's maximum context length is 32768 tokens");
  EXPECT_EQ(s.context_overflows, 1);
  EXPECT_FALSE(s.valid);
  ASSERT_EQ(s.invalid_reasons.size(), 1u);
  EXPECT_EQ(s.invalid_reasons[0], "1 of 20 requests overflowed the context (5.0% > 1.0%)");
}

TEST(Validity, NoSuccessIsInvalid) {
  Summary s = summarize({}, SummaryOptions{});
  EXPECT_FALSE(s.valid);
  EXPECT_TRUE(std::isnan(s.total_tok_s));
}

TEST(Metrics, MissingUsageFallsBackToLocalCountsWithAWarning) {
  std::vector<AgentxSession> sessions = {session("u", {turn(0, 1, 640, 4)})};
  ReplayRun r(sessions, plain_config(10 * kMs), [](const RequestSpec&) {
    Reply reply;
    reply.send_usage = false;
    return reply;
  });
  r.run();
  Summary s = summarize(r.records(), SummaryOptions{});
  EXPECT_EQ(s.output_tokens, 4);   // four chunks of one token
  EXPECT_EQ(s.input_tokens, 640);  // what was asked for
  EXPECT_TRUE(std::isnan(s.prefix_cache_hit));
  EXPECT_EQ(s.requests_without_usage, 1);
  ASSERT_FALSE(s.warnings.empty());
  EXPECT_NE(s.warnings[0].find("no usage chunk"), std::string::npos);
}

TEST(Slo, ParsesNamesAndRejectsNonsense) {
  Slo slo = parse_slo("ttft:2000 itl:50");
  EXPECT_EQ(slo.ttft_ms, 2000);
  EXPECT_EQ(slo.itl_ms, 50);
  EXPECT_FALSE(slo.e2el_ms);
  EXPECT_EQ(parse_slo("tpot:20,e2el:9000").itl_ms, 20);
  EXPECT_EQ(format_slo(slo), "ttft:2000 itl:50");
  EXPECT_TRUE(parse_slo("").empty());
  EXPECT_THROW(parse_slo("ttft=5"), Error);
  EXPECT_THROW(parse_slo("ttft:-5"), Error);
  EXPECT_THROW(parse_slo("latency:5"), Error);
}

}  // namespace
}  // namespace paceline::bench
