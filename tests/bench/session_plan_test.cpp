// The timing rules of one play, before anything is sent: think time end to start, the per-session
// idle cap, the start window, and where subagents start and are joined.
#include <gtest/gtest.h>

#include <cmath>

#include "base/error.h"
#include "bench/session_plan.h"
#include "bench/wait_ns.h"
#include "scripted_transport.h"
#include "session_builder.h"

namespace paceline::bench {
namespace {

using test_util::background_subagent;
using test_util::kMs;
using test_util::kSec;
using test_util::session;
using test_util::subagent;
using test_util::turn;

constexpr int64_t kCap300 = 300 * kSec;

TEST(ThinkTime, IsTheRecordedGapMinusTheRecordedServerTime) {
  // t_k - (t_{k-1} + api_time_{k-1}): 5 - (0 + 2) = 3 s; 20 - (5 + 1.5) = 13.5 s.
  AgentxSession s = session("s", {turn(0, 2), turn(5, 1.5), turn(20, 3)});
  SessionPlan plan = plan_session(s, 0, kCap300);
  ASSERT_EQ(plan.streams.size(), 1u);
  const auto& turns = plan.streams[0].turns;
  ASSERT_EQ(turns.size(), 3u);
  EXPECT_EQ(turns[0].gap_ns, 0);
  EXPECT_EQ(turns[1].gap_ns, 3 * kSec);
  EXPECT_EQ(turns[2].gap_ns, 13'500 * kMs);
}

TEST(ThinkTime, OverlappingRecordedCallsWaitZero) {
  // Turn 1 began before turn 0's call ended: max(0, 1 - (0 + 4)) = 0.
  AgentxSession s = session("s", {turn(0, 4), turn(1, 1)});
  EXPECT_EQ(plan_session(s, 0, kCap300).streams[0].turns[1].gap_ns, 0);
}

TEST(ThinkTime, MissingApiTimeCountsAsZero) {
  AgentxSession s = session("s", {turn(0, 0), turn(7, 1)});
  s.requests[0].api_time.reset();
  EXPECT_EQ(plan_session(s, 0, kCap300).streams[0].turns[1].gap_ns, 7 * kSec);
}

TEST(SessionIdleCap, CutsALongGapToTheCap) {
  AgentxSession s = session("s", {turn(0, 1), turn(1001, 1), turn(1100, 1)});
  SessionPlan plan = plan_session(s, 0, kCap300);
  EXPECT_EQ(plan.streams[0].turns[1].gap_ns, 300 * kSec);                    // 1000 s -> 300 s
  EXPECT_EQ(plan.streams[0].turns[2].gap_ns, 98 * kSec);                     // under the cap: kept
  EXPECT_EQ(plan_session(s, 0, 0).streams[0].turns[1].gap_ns, 1000 * kSec);  // cap off
  EXPECT_EQ(gap_to_wait_ns(12.5, 10 * kSec), 10 * kSec);
  EXPECT_EQ(gap_to_wait_ns(-3, 10 * kSec), 0);
}

// Found by fuzz/agentx_trace_fuzz.cpp: a gap beyond int64 nanoseconds (t = 1e300 in a trace) was
// rounded by llround to INT64_MIN, a negative wait that the cap did not catch, so the turn went
// out at once instead of after the cap.
TEST(SessionIdleCap, AGapBeyondInt64IsCutToTheCapNotSentAtOnce) {
  EXPECT_EQ(gap_to_wait_ns(1e300, kCap300), kCap300);
  EXPECT_EQ(gap_to_wait_ns(1e300, 0), kFarFutureNs);
  EXPECT_EQ(gap_to_wait_ns(std::nan(""), kCap300), 0);
  AgentxSession s = session("s", {turn(0, 1), turn(1e300, 1)});
  EXPECT_EQ(plan_session(s, 0, kCap300).streams[0].turns[1].gap_ns, kCap300);
}

TEST(StartWindow, PicksTheFirstTurnAtOrAfterTStar) {
  std::vector<AgentxRequest> turns;
  for (int i = 0; i <= 10; ++i) turns.push_back(turn(10.0 * i, 1));  // duration 100 s
  AgentxSession s = session("s", turns);
  EXPECT_EQ(choose_start_turn(s, 0.0, 0.25, 0.75), 3);   // t* = 25 -> turn at 30
  EXPECT_EQ(choose_start_turn(s, 0.5, 0.25, 0.75), 5);   // t* = 50 -> turn at 50
  EXPECT_EQ(choose_start_turn(s, 0.99, 0.25, 0.75), 8);  // t* = 74.5 -> turn at 80
  EXPECT_EQ(choose_start_turn(s, 0.7, 0.0, 0.0), 0);     // window off: turn 0
  EXPECT_EQ(choose_start_turn(s, 0.7, 1.0, 1.0), 10);    // t* = duration: the last turn
  EXPECT_THROW(choose_start_turn(s, 0.5, 0.8, 0.2), Error);
}

TEST(StartWindow, AlwaysLeavesATurn) {
  // t* in [25, 75] of a 100 s session whose only later turn is its last.
  AgentxSession s = session("s", {turn(0, 1), turn(1, 1), turn(100, 1)});
  EXPECT_EQ(choose_start_turn(s, 0.0, 0.25, 0.75), 2);
  AgentxSession one = session("one", {turn(0, 1)});
  EXPECT_EQ(choose_start_turn(one, 0.9, 0.25, 0.75), 0);
}

TEST(StartWindow, PlayStartsAtTheChosenTurnWithThePrimerBeforeIt) {
  AgentxSession s = session("s", {turn(0, 1), turn(10, 1), turn(20, 1), turn(30, 1)});
  SessionPlan plan = plan_session(s, 2, kCap300);
  EXPECT_EQ(plan.start_turn, 2);
  EXPECT_EQ(plan.primer_turn, 1);
  ASSERT_EQ(plan.streams[0].turns.size(), 2u);
  EXPECT_EQ(plan.streams[0].turns[0].index, 2);
  EXPECT_EQ(plan.streams[0].turns[0].gap_ns, 0);  // the start turn goes at once
  EXPECT_EQ(plan.streams[0].turns[1].gap_ns, 9 * kSec);
  EXPECT_EQ(plan_session(s, 0, kCap300).primer_turn, -1);
  EXPECT_THROW(plan_session(s, 4, kCap300), Error);
}

// Parent: p0 at 0 (ends 1), p1 at 7 (ends 8), p2 at 13. Subagent A runs 2..12 with turns at 0
// and 5 of its own time (api 1 each).
AgentxSession session_with_subagent() {
  return session("sub", {turn(0, 1), turn(7, 1), turn(13, 1)},
                 {subagent("agent_A", 2, 12, {turn(0, 1), turn(5, 1)})});
}

TEST(Subagents, StartAfterTheSpawningTurnAndJoinBeforeTheNextTurnAfterTheirEnd) {
  AgentxSession s = session_with_subagent();
  SessionPlan plan = plan_session(s, 0, kCap300);
  ASSERT_EQ(plan.streams.size(), 2u);
  const PlannedStream& parent = plan.streams[0];
  const PlannedStream& child = plan.streams[1];
  EXPECT_EQ(parent.children, std::vector<int>{1});
  EXPECT_EQ(child.parent, 0);
  EXPECT_EQ(child.agent_id, "agent_A");
  EXPECT_EQ(child.spawn_turn, 0);                         // p0 is the last turn begun by t = 2
  EXPECT_EQ(child.start_gap_ns, 1 * kSec);                // 2 - (0 + 1)
  EXPECT_EQ(child.turns[1].gap_ns, 4 * kSec);             // 5 - (0 + 1), in the subagent's own time
  EXPECT_TRUE(parent.turns[1].joins.empty());             // p1 (t = 7) runs alongside the subagent
  EXPECT_EQ(parent.turns[2].joins, std::vector<int>{1});  // p2 is the first turn after 12
  EXPECT_EQ(parent.turns[1].gap_ns, 6 * kSec);            // 7 - (0 + 1)
  // p2 waits from the later of p1's end (8) and the subagent's end (12): 13 - 12 = 1 s.
  EXPECT_EQ(parent.turns[2].gap_ns, 1 * kSec);
}

TEST(Subagents, SpawnedBeforeTheStartTurnAreDropped) {
  AgentxSession s = session_with_subagent();
  SessionPlan plan = plan_session(s, 1, kCap300);
  ASSERT_EQ(plan.streams.size(), 1u);
  EXPECT_TRUE(plan.streams[0].turns[1].joins.empty());
  EXPECT_EQ(plan.streams[0].turns[1].gap_ns, 5 * kSec);  // 13 - (7 + 1)
}

TEST(Subagents, NoLaterTurnMeansNoJoinButTheTreeStillOwnsIt) {
  AgentxSession s =
      session("late", {turn(0, 1), turn(3, 1)}, {subagent("agent_B", 1.5, 50, {turn(0, 1)})});
  SessionPlan plan = plan_session(s, 0, kCap300);
  ASSERT_EQ(plan.streams.size(), 2u);
  EXPECT_TRUE(plan.streams[0].turns[1].joins.empty());
  EXPECT_EQ(plan.streams[0].children, std::vector<int>{1});
}

TEST(Subagents, BackgroundOnesStartAtTheirLaunchAndAreJoinedByNoTurn) {
  // async_launched at t = 2 with no duration: it starts 2 - (0 + 1) = 1 s after p0, and p1 and
  // p2 wait only for the turn before them, yet the play's tree still owns the stream.
  AgentxSession s = session("bg", {turn(0, 1), turn(7, 1), turn(13, 1)},
                            {background_subagent("agent_A", 2, {turn(0, 1), turn(5, 1)})});
  SessionPlan plan = plan_session(s, 0, kCap300);
  ASSERT_EQ(plan.streams.size(), 2u);
  const PlannedStream& parent = plan.streams[0];
  EXPECT_EQ(parent.children, std::vector<int>{1});
  EXPECT_EQ(plan.streams[1].spawn_turn, 0);
  EXPECT_EQ(plan.streams[1].start_gap_ns, 1 * kSec);
  for (const PlannedTurn& t : parent.turns) EXPECT_TRUE(t.joins.empty()) << t.index;
  EXPECT_EQ(parent.turns[2].gap_ns, 5 * kSec);  // 13 - (7 + 1): no subagent end in it
}

}  // namespace
}  // namespace paceline::bench
