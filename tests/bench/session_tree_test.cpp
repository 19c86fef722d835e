// Session trees in virtual time: subagent streams and their join, lane recycling when a tree has
// drained, the cache-bust marker, and the end of the run (duration, drain, cancel).
#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <set>

#include "replay_harness.h"
#include "session_builder.h"

namespace paceline::bench {
namespace {

using namespace test_util;

struct Start {
  int stream;
  int turn;
  int64_t at_ns;
  bool operator==(const Start&) const = default;
};

std::vector<Start> starts(const ReplayRun& r) {
  std::vector<Start> out;
  for (const auto& rec : r.records()) out.push_back({rec.stream, rec.turn, rec.start_ns});
  return out;
}

TEST(Replay, SubagentRunsAlongsideTheParentAndIsJoined) {
  // Parent p0 (t 0, api 1), p1 (t 7), p2 (t 13); subagent A from 2 to 12 with c0 (t 0, api 1)
  // and c1 (t 5). Answers take 100 ms, c1 takes 10 s:
  //   p0 0 -> 0.1; A starts 1 s later (2 - (0 + 1)): c0 1.1 -> 1.2; c1 at 1.2 + 4 = 5.2 -> 15.2;
  //   p1 at 0.1 + 6 = 6.1 (while c1 runs); p2 joins A: 15.2 + (13 - 12) = 16.2.
  std::vector<AgentxSession> sessions = {
      session("sub", {turn(0, 1), turn(7, 1), turn(13, 1)},
              {subagent("agent_A", 2, 12, {turn(0, 1), turn(5, 1)})})};
  ReplayRun r(sessions, plain_config(16'250 * kMs), [](const RequestSpec& spec) {
    Reply reply;
    if (spec.stream == 1 && spec.turn == 1) reply.ttft_ns = 10 * kSec;
    return reply;
  });
  r.run();
  std::vector<Start> expected = {{0, 0, 0},
                                 {1, 0, 1'100 * kMs},
                                 {1, 1, 5'200 * kMs},
                                 {0, 1, 6'100 * kMs},
                                 {0, 2, 16'200 * kMs}};
  EXPECT_EQ(starts(r), expected);
  EXPECT_EQ(r.records()[1].agent, "agent_A");
  EXPECT_EQ(r.records()[0].agent, "");
  EXPECT_EQ(r.transport.max_in_flight(), 2);  // more than the one lane: children run in parallel
}

TEST(Replay, BackgroundSubagentStartsAtItsLaunchAndGatesNoTurn) {
  // As above, but A is async_launched at t 2 (no duration): c0 1.1 -> 1.2, c1 5.2 -> 15.2 as
  // before; p1 at 6.1 -> 6.2 and p2 at 6.2 + (13 - (7 + 1)) = 11.2 without waiting for A. The
  // play ends (and the lane recycles) only when c1 has drained at 15.2.
  std::vector<AgentxSession> sessions = {
      session("bg", {turn(0, 1), turn(7, 1), turn(13, 1)},
              {background_subagent("agent_A", 2, {turn(0, 1), turn(5, 1)})})};
  ReplayRun r(sessions, plain_config(15'250 * kMs), [](const RequestSpec& spec) {
    Reply reply;
    if (spec.stream == 1 && spec.turn == 1) reply.ttft_ns = 10 * kSec;
    return reply;
  });
  r.run();
  std::vector<Start> expected = {{0, 0, 0},           {1, 0, 1'100 * kMs},  {1, 1, 5'200 * kMs},
                                 {0, 1, 6'100 * kMs}, {0, 2, 11'200 * kMs}, {0, 0, 15'200 * kMs}};
  EXPECT_EQ(starts(r), expected);
  EXPECT_EQ(r.records()[1].agent, "agent_A");
  EXPECT_EQ(r.records().back().play, 1);
}

TEST(Replay, LaneRecyclesWhenTheTreeHasDrained) {
  // X: 0 -> 0.1, then 2 - (0 + 1) = 1 s: 1.1 -> 1.2. Y follows at once: 1.2 -> 1.3, then
  // 3 - (0 + 1) = 2 s: 3.3 -> 3.4. X again (play 2) at 3.4.
  std::vector<AgentxSession> sessions = {session("X", {turn(0, 1), turn(2, 1)}),
                                         session("Y", {turn(0, 1), turn(3, 1)})};
  ReplayRun r(sessions, plain_config(3'450 * kMs));
  r.run();
  std::vector<std::tuple<std::string, int, int, int64_t>> got;
  for (const auto& rec : r.records())
    got.emplace_back(rec.session, rec.play, rec.turn, rec.start_ns);
  std::vector<std::tuple<std::string, int, int, int64_t>> expected = {{"X", 0, 0, 0},
                                                                      {"X", 0, 1, 1'100 * kMs},
                                                                      {"Y", 1, 0, 1'200 * kMs},
                                                                      {"Y", 1, 1, 3'300 * kMs},
                                                                      {"X", 2, 0, 3'400 * kMs}};
  EXPECT_EQ(got, expected);
}

TEST(Replay, LaneWaitsForAnUnjoinedSubagentBeforeRecycling) {
  // The subagent outlives the parent's last turn; its one call takes 20 s (0.6 -> 20.6), so the
  // next play starts at 20.6 s, not when p1 answers at 2.2 s.
  std::vector<AgentxSession> sessions = {
      session("L", {turn(0, 1), turn(3, 1)}, {subagent("agent_C", 1.5, 50, {turn(0, 1)})})};
  ReplayRun r(sessions, plain_config(20'650 * kMs), [](const RequestSpec& spec) {
    Reply reply;
    if (spec.stream == 1) reply.ttft_ns = 20 * kSec;
    return reply;
  });
  r.run();
  std::vector<Start> expected = {
      {0, 0, 0}, {1, 0, 600 * kMs}, {0, 1, 2'100 * kMs}, {0, 0, 20'600 * kMs}};
  EXPECT_EQ(starts(r), expected);
  EXPECT_EQ(r.records()[3].play, 1);
}

TEST(Replay, CacheBustMarkerIsOnePerPlay) {
  std::vector<AgentxSession> sessions = {
      session("sub", {turn(0, 1), turn(7, 1), turn(13, 1)},
              {subagent("agent_A", 2, 12, {turn(0, 1), turn(5, 1)})})};
  auto markers = [&](uint64_t seed) {
    SessionReplayConfig config = plain_config(60 * kSec);
    config.concurrency = 3;  // three lanes, one session: each copy must get its own marker
    config.warmup_requests_per_lane = 1;
    config.seed = seed;
    ReplayRun r(sessions, config);
    r.run();
    std::map<std::pair<int, int>, std::set<std::string>> by_play;
    const std::regex format(R"(\[rid:[0-9a-f]{12}\]\n\n)");
    for (const auto& s : r.transport.sent()) {
      EXPECT_TRUE(std::regex_match(s.spec.marker, format)) << s.spec.marker;
      by_play[{s.spec.lane, s.spec.play}].insert(s.spec.marker);
    }
    std::vector<std::string> out;
    for (const auto& [play, set] : by_play) {
      EXPECT_EQ(set.size(), 1u);  // warmup, parent and subagent of one play share it
      out.push_back(*set.begin());
    }
    return out;
  };
  std::vector<std::string> a = markers(7);
  ASSERT_GE(a.size(), 6u);  // three lanes, at least two plays each
  EXPECT_EQ(std::set<std::string>(a.begin(), a.end()).size(), a.size());  // never repeated
  EXPECT_EQ(markers(7), a);
  EXPECT_NE(markers(8), a);
}

TEST(Replay, DurationStopsNewRequestsAndTheDrainTimeoutCutsTheRest) {
  // t1 goes at 0.1 s and would take 100 s. The run stops at 5 s and waits 10 s more.
  std::vector<AgentxSession> sessions = {session("s", {turn(0, 1), turn(1, 1), turn(2, 1)})};
  SessionReplayConfig config = plain_config(5 * kSec);
  config.drain_timeout_ns = 10 * kSec;
  ReplayRun r(sessions, config, [](const RequestSpec& spec) {
    Reply reply;
    if (spec.turn == 1) reply.ttft_ns = 100 * kSec;
    return reply;
  });
  r.run();
  EXPECT_EQ(r.clock.now_ns(), 15 * kSec);
  ASSERT_EQ(r.records().size(), 2u);
  EXPECT_TRUE(r.records()[0].ok());
  EXPECT_EQ(r.records()[1].status, RecordStatus::kIncomplete);
  EXPECT_EQ(r.records()[1].end_ns, 15 * kSec);
  EXPECT_EQ(r.transport.cancelled(), std::vector<uint64_t>{1});
}

TEST(Replay, RequestsInFlightAtTheEndDrainAndCount) {
  std::vector<AgentxSession> sessions = {session("s", {turn(0, 1), turn(1, 1)})};
  SessionReplayConfig config = plain_config(50 * kMs);
  ReplayRun r(sessions, config, [](const RequestSpec&) {
    Reply reply;
    reply.ttft_ns = 2 * kSec;
    return reply;
  });
  r.run();
  ASSERT_EQ(r.records().size(), 1u);
  EXPECT_TRUE(r.records()[0].ok());
  EXPECT_EQ(r.records()[0].end_ns, 2 * kSec);
}

TEST(Replay, CancelRecordsWhatIsInFlight) {
  std::vector<AgentxSession> sessions = {session("s", {turn(0, 1), turn(1, 1)})};
  VirtualClock clock;
  ScriptedTransport transport(clock);
  SessionReplayer replayer(sessions, plain_config(60 * kSec), transport);
  replayer.start(0);
  replayer.advance_to(0);  // t0 goes
  replayer.cancel(20 * kMs);
  EXPECT_TRUE(replayer.finished());
  EXPECT_TRUE(replayer.cancelled());
  EXPECT_EQ(replayer.log().records()[0].status, RecordStatus::kIncomplete);
  transport.advance_to(1 * kSec);  // a late answer is ignored
  EXPECT_EQ(replayer.log().records()[0].status, RecordStatus::kIncomplete);
}

TEST(Replay, AFailedTurnStillAdvancesItsSession) {
  // t0 fails after 50 ms; t1 follows its think time from that moment: 0.05 + 1 = 1.05 s.
  std::vector<AgentxSession> sessions = {session("s", {turn(0, 1), turn(2, 1)})};
  ReplayRun r(sessions, plain_config(1'100 * kMs), [](const RequestSpec& spec) {
    Reply reply;
    if (spec.turn == 0) reply.error_status = 500;
    return reply;
  });
  r.run();
  ASSERT_EQ(r.records().size(), 2u);
  EXPECT_EQ(r.records()[0].status, RecordStatus::kError);
  EXPECT_EQ(r.records()[1].start_ns, 1'050 * kMs);
}

}  // namespace
}  // namespace paceline::bench
