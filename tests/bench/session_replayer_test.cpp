// Closed-loop timing in virtual time: think time end to start, both idle caps, the start window
// and the warmup. Every expected time is worked out by hand in the comments.
#include <gtest/gtest.h>

#include <set>

#include "replay_harness.h"
#include "session_builder.h"

namespace paceline::bench {
namespace {

using namespace test_util;

TEST(Replay, ThinkTimeRunsFromTheEndOfThePreviousTurn) {
  // Gaps: 5 - (0 + 2) = 3 s and 20 - (5 + 1) = 14 s. Each answer takes 100 ms, so the turns go
  // at 0, 0.1 + 3 = 3.1 and 3.2 + 14 = 17.2 s (start to start would give 0, 5, 20).
  std::vector<AgentxSession> sessions = {session("s", {turn(0, 2), turn(5, 1), turn(20, 3)})};
  ReplayRun r(sessions, plain_config(17'250 * kMs));
  r.run();
  ASSERT_EQ(r.records().size(), 3u);
  EXPECT_EQ(r.records()[0].start_ns, 0);
  EXPECT_EQ(r.records()[1].start_ns, 3'100 * kMs);
  EXPECT_EQ(r.records()[2].start_ns, 17'200 * kMs);
  for (const auto& rec : r.records()) {
    EXPECT_EQ(rec.scheduled_ns, rec.start_ns);  // virtual time never lags
    EXPECT_TRUE(rec.ok());
  }
}

TEST(Replay, SessionIdleCapCutsALongThink) {
  // 1001 - (0 + 1) = 1000 s of think, cut to 300 s: the second turn goes at 0.1 + 300 s.
  std::vector<AgentxSession> sessions = {session("s", {turn(0, 1), turn(1001, 1)})};
  ReplayRun r(sessions, plain_config(300'150 * kMs));
  r.run();
  ASSERT_EQ(r.records().size(), 2u);
  EXPECT_EQ(r.records()[1].start_ns, 300'100 * kMs);
  EXPECT_EQ(r.replayer.idle_skipped_ns(), 0);
}

TEST(Replay, SystemIdleCapMovesEveryTimerEarlierWhenNothingIsInFlight) {
  // Lane 0 plays A: a0 at 0 (100 ms), then 50 s of think. Lane 1 plays B: b0 at 0 takes 30 s,
  // then 100 - (0 + 30) = 70 s of think.
  //  - At 0.1 s a1 is 50 s away, but b0 is in flight: nothing moves.
  //  - At 30 s nothing is in flight; a1 is due at 50.1 (20.1 s away > 10 s), so every pending
  //    timer moves 10.1 s earlier: a1 -> 40.0, b1 (due 100) -> 89.9.
  //  - a1 answers at 40.1; a2 is due at 40.1 + 300 (capped). b1 at 89.9 is 49.8 s away: every
  //    timer moves 39.8 s earlier, b1 -> 50.1.
  std::vector<AgentxSession> sessions = {session("A", {turn(0, 0), turn(50, 0), turn(10000, 0)}),
                                         session("B", {turn(0, 30), turn(100, 0), turn(101, 0)})};
  SessionReplayConfig config = plain_config(50'150 * kMs);
  config.concurrency = 2;
  config.system_idle_gap_cap_ns = 10 * kSec;
  ReplayRun r(sessions, config, [](const RequestSpec& spec) {
    Reply reply;
    if (spec.session == "B" && spec.turn == 0) reply.ttft_ns = 30 * kSec;
    return reply;
  });
  r.run();
  std::vector<std::pair<std::string, int64_t>> starts;
  for (const auto& rec : r.records()) starts.emplace_back(rec.session, rec.start_ns);
  std::vector<std::pair<std::string, int64_t>> expected = {
      {"A", 0}, {"B", 0}, {"A", 40'000 * kMs}, {"B", 50'100 * kMs}};
  EXPECT_EQ(starts, expected);
  EXPECT_EQ(r.replayer.idle_skipped_ns(), 49'900 * kMs);
}

TEST(Replay, StartWindowDrawsEachLanesFirstTurnAndLaterPlaysStartAtZero) {
  std::vector<AgentxRequest> turns;
  for (int i = 0; i <= 10; ++i) turns.push_back(turn(10.0 * i, 1));  // 100 s, 9 s of think each
  std::vector<AgentxSession> sessions = {session("s", turns)};
  auto first_turns = [&](uint64_t seed) {
    SessionReplayConfig config = plain_config(120 * kSec);
    config.concurrency = 64;
    config.seed = seed;
    config.start_window_lo = 0.25;
    config.start_window_hi = 0.75;
    ReplayRun r(sessions, config);
    r.run();
    std::vector<int> first(64, -1);
    for (const auto& rec : r.records()) {
      if (rec.phase == Phase::kWarmup) {
        EXPECT_EQ(rec.play, 0);
        continue;
      }
      if (rec.play == 0 && first[rec.lane] < 0) {
        first[rec.lane] = rec.turn;
        // The primer is the turn just before the start turn.
        bool primed = false;
        for (const auto& w : r.records()) {
          primed |= w.phase == Phase::kWarmup && w.lane == rec.lane && w.turn == rec.turn - 1;
        }
        EXPECT_TRUE(primed) << "lane " << rec.lane;
      }
      if (rec.play == 1 && rec.stream == 0) {
        // The first request of every later play is turn 0.
        bool earlier = false;
        for (const auto& o : r.records()) {
          earlier |= o.lane == rec.lane && o.play == 1 && o.id < rec.id;
        }
        if (!earlier) {
          EXPECT_EQ(rec.turn, 0) << "lane " << rec.lane;
        }
      }
    }
    return first;
  };
  std::vector<int> a = first_turns(1);
  std::set<int> distinct(a.begin(), a.end());
  for (int t : a) {
    EXPECT_GE(t, 3);  // t* >= 25 s: the turn at 30 s or later
    EXPECT_LE(t, 8);  // t* < 75 s: the turn at 80 s at the latest
  }
  EXPECT_GE(distinct.size(), 4u);
  EXPECT_EQ(first_turns(1), a);  // the seed decides
  EXPECT_NE(first_turns(2), a);
}

TEST(Replay, WarmupPrimesThenProfilingStartsWhenEveryLaneHasDrained) {
  // t* = 0.5 * 30 = 15 s: start turn 2, primer turn 1. Lane 1's primer takes 5 s, so profiling
  // starts at 5 + 3 * 0.1 = 5.3 s for both lanes, though lane 0 was warm at 0.4 s.
  std::vector<AgentxSession> sessions = {
      session("s", {turn(0, 1, 640), turn(10, 1, 1280), turn(20, 1, 1920), turn(30, 1, 2560)})};
  SessionReplayConfig config = plain_config(1 * kSec);
  config.concurrency = 2;
  config.start_window_lo = config.start_window_hi = 0.5;
  config.warmup_requests_per_lane = 3;
  ReplayRun r(sessions, config, [](const RequestSpec& spec) {
    Reply reply;
    if (spec.phase == Phase::kWarmup && spec.lane == 1 && spec.turn == 1) reply.ttft_ns = 5 * kSec;
    return reply;
  });
  r.run();
  EXPECT_EQ(r.replayer.profiling_start_ns(), 5'300 * kMs);
  auto warmup = r.phase(Phase::kWarmup);
  ASSERT_EQ(warmup.size(), 8u);
  for (int lane = 0; lane < 2; ++lane) {
    std::vector<const RequestRecord*> mine;
    for (const auto& w : warmup) {
      if (w.lane == lane) mine.push_back(&w);
    }
    ASSERT_EQ(mine.size(), 4u);
    EXPECT_EQ(mine[0]->turn, 1);  // the primer, with its full prefix, one token out
    EXPECT_EQ(mine[0]->requested_isl, 1280);
    EXPECT_EQ(mine[0]->requested_osl, 1);
    for (int k = 1; k <= 3; ++k) {  // then the one-token requests
      EXPECT_EQ(mine[k]->turn, -k);
      EXPECT_EQ(mine[k]->requested_isl, 64);
      EXPECT_EQ(mine[k]->requested_osl, 1);
    }
  }
  auto profiling = r.phase(Phase::kProfiling);
  ASSERT_GE(profiling.size(), 2u);
  for (int lane = 0; lane < 2; ++lane) {
    EXPECT_EQ(profiling[lane].lane, lane);
    EXPECT_EQ(profiling[lane].turn, 2);
    EXPECT_EQ(profiling[lane].start_ns, 5'300 * kMs);
  }
  // The primer carried the primer turn's blocks; the marker ties it to the profiled play.
  const auto& sent = r.transport.sent();
  EXPECT_EQ(sent[0].spec.hash_ids, sessions[0].requests[1].hash_ids);
  EXPECT_TRUE(sent[2].spec.hash_ids.empty());
  for (const auto& s : sent) {
    if (s.spec.lane == 0 && s.spec.play == 0) {
      EXPECT_EQ(s.spec.marker, sent[0].spec.marker);
    }
  }
}

TEST(Replay, AFailedWarmupAbortsTheRun) {
  std::vector<AgentxSession> sessions = {session("s", {turn(0, 1), turn(10, 1), turn(20, 1)})};
  SessionReplayConfig config = plain_config(100 * kSec);
  config.concurrency = 2;
  config.warmup_requests_per_lane = 2;
  ReplayRun r(sessions, config, [](const RequestSpec& spec) {
    Reply reply;
    if (spec.lane == 0 && spec.turn == -2) {
      reply.error_status = 503;
      reply.error_text = "overloaded";
    }
    if (spec.lane == 1) reply.ttft_ns = 10 * kSec;  // still in flight when lane 0 fails
    return reply;
  });
  r.run();
  ASSERT_TRUE(r.replayer.abort_reason());
  EXPECT_NE(r.replayer.abort_reason()->find("warmup request failed on lane 0"), std::string::npos);
  EXPECT_NE(r.replayer.abort_reason()->find("503: overloaded"), std::string::npos);
  EXPECT_FALSE(r.replayer.profiling_start_ns());
  EXPECT_TRUE(r.phase(Phase::kProfiling).empty());
  EXPECT_EQ(r.transport.cancelled().size(), 1u);                // lane 1's request was abandoned
  EXPECT_EQ(r.records()[1].status, RecordStatus::kIncomplete);  // lane 1's one-token request
}

TEST(Replay, AWarmupAnsweredWithoutTextStillCounts) {
  // A one-token warmup whose token has no text (half of a UTF-8 character) completes with no
  // content chunk: the server answered, so profiling starts; the record still says why it has
  // no TTFT.
  std::vector<AgentxSession> sessions = {session("s", {turn(0, 1), turn(10, 1), turn(20, 1)})};
  SessionReplayConfig config = plain_config(100 * kSec);
  config.warmup_requests_per_lane = 1;
  ReplayRun r(sessions, config, [](const RequestSpec& spec) {
    Reply reply;
    if (spec.turn < 0) reply.tokens = 0;
    return reply;
  });
  r.run();
  EXPECT_FALSE(r.replayer.abort_reason());
  EXPECT_TRUE(r.replayer.profiling_start_ns());
  EXPECT_FALSE(r.phase(Phase::kProfiling).empty());
  ASSERT_FALSE(r.phase(Phase::kWarmup).empty());
  for (const RequestRecord& w : r.phase(Phase::kWarmup)) {
    EXPECT_EQ(w.status, RecordStatus::kError);
    EXPECT_EQ(w.error, "the stream ended without any content");
  }
}

}  // namespace
}  // namespace paceline::bench
