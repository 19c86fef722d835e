// Open-loop Mooncake replay: sends at the trace's timestamps whatever the server does, chains
// AIPerf-style sessions, and records schedule lag.
#include <gtest/gtest.h>

#include "base/clock.h"
#include "bench/arrival_replayer.h"
#include "bench/summary.h"
#include "bench/virtual_driver.h"
#include "scripted_transport.h"

namespace paceline::bench {
namespace {

using test_util::kMs;
using test_util::kSec;
using test_util::Reply;
using test_util::ScriptedTransport;

MooncakeRecord record(std::optional<double> ts, int64_t in, int64_t out,
                      std::optional<std::string> session = std::nullopt,
                      std::optional<double> delay = std::nullopt) {
  MooncakeRecord r;
  r.timestamp_ms = ts;
  r.input_length = in;
  r.output_length = out;
  for (int64_t i = 0; i < (in + 511) / 512; ++i) r.hash_ids.push_back(i);
  r.session_id = std::move(session);
  r.delay_ms = delay;
  return r;
}

// Found with fuzz/agentx_trace_fuzz.cpp's twin bug in the session plan: a timestamp beyond int64
// nanoseconds (1e300 ms passes the reader: finite and >= 0) was rounded to INT64_MIN and sent
// at once; it belongs at the far end of the run.
TEST(ArrivalReplay, ATimestampBeyondInt64IsFarFutureNotNow) {
  std::vector<MooncakeRecord> records = {record(0, 600, 2), record(1e300, 700, 2)};
  VirtualClock clock;
  ScriptedTransport transport(clock, [](const RequestSpec&) { return Reply{}; });
  ArrivalReplayConfig config;
  config.duration_ns = 10 * kSec;
  ArrivalReplayer replayer(records, config, transport);
  run_virtual(replayer, transport, clock);
  ASSERT_EQ(transport.sent().size(), 1u);  // the far one is never due within the run
  EXPECT_EQ(replayer.log().records()[0].start_ns, 0);
}

TEST(ArrivalReplay, SendsAtTheScaledTimestampsEvenWhenTheServerIsSlow) {
  std::vector<MooncakeRecord> records = {record(0, 600, 2), record(0, 700, 2), record(1000, 100, 1),
                                         record(2500, 1100, 3)};
  VirtualClock clock;
  ScriptedTransport transport(clock, [](const RequestSpec&) {
    Reply r;
    r.ttft_ns = 5 * kSec;  // far slower than the arrivals
    return r;
  });
  ArrivalReplayConfig config;
  config.time_scale = 0.5;
  ArrivalReplayer replayer(records, config, transport);
  run_virtual(replayer, transport, clock);
  const auto& recs = replayer.log().records();
  ASSERT_EQ(recs.size(), 4u);
  EXPECT_EQ(recs[0].start_ns, 0);
  EXPECT_EQ(recs[1].start_ns, 0);
  EXPECT_EQ(recs[2].start_ns, 500 * kMs);
  EXPECT_EQ(recs[3].start_ns, 1250 * kMs);
  EXPECT_EQ(transport.max_in_flight(), 4);
  const auto& sent = transport.sent();
  EXPECT_EQ(sent[3].spec.block_size, 512);
  EXPECT_EQ(sent[3].spec.hash_ids, (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(sent[3].spec.hash_scope, "mooncake");
  EXPECT_EQ(sent[0].spec.marker, sent[3].spec.marker);  // one marker for the run
  Summary s = summarize(recs, SummaryOptions{});
  EXPECT_EQ(s.requests_completed, 4);
  EXPECT_DOUBLE_EQ(s.schedule_lag_ms.max, 0);  // virtual time is never late
}

TEST(ArrivalReplay, SessionTurnsWaitForThePreviousAnswerAndTheirDelay) {
  // s1: first at 0 (answer at 0.1 s), the next 250 ms after that answer; s2's second turn has
  // no delay and goes at its own timestamp (300 ms) once s2's first has been answered (0.2 s).
  std::vector<MooncakeRecord> records = {record(0, 64, 1, "s1"), record(100, 64, 1, "s2"),
                                         record(std::nullopt, 64, 1, "s1", 250),
                                         record(300, 64, 1, "s2")};
  VirtualClock clock;
  ScriptedTransport transport(clock);
  ArrivalReplayer replayer(records, ArrivalReplayConfig{}, transport);
  run_virtual(replayer, transport, clock);
  const auto& recs = replayer.log().records();
  ASSERT_EQ(recs.size(), 4u);
  std::vector<std::pair<int, int64_t>> got;
  for (const auto& r : recs) got.emplace_back(r.turn, r.start_ns);
  std::vector<std::pair<int, int64_t>> expected = {
      {0, 0}, {1, 100 * kMs}, {3, 300 * kMs}, {2, 350 * kMs}};
  EXPECT_EQ(got, expected);
  EXPECT_EQ(recs[3].session, "s1");
}

TEST(ArrivalReplay, DurationCutsTheTrace) {
  std::vector<MooncakeRecord> records = {record(0, 64, 1), record(1000, 64, 1),
                                         record(9000, 64, 1)};
  VirtualClock clock;
  ScriptedTransport transport(clock);
  ArrivalReplayConfig config;
  config.duration_ns = 2 * kSec;
  ArrivalReplayer replayer(records, config, transport);
  run_virtual(replayer, transport, clock);
  EXPECT_EQ(replayer.log().records().size(), 2u);
  EXPECT_EQ(clock.now_ns(), 2 * kSec);
}

}  // namespace
}  // namespace paceline::bench
