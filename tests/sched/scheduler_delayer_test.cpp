// The scheduler and the PrefillDelayer together (../shared/specs/prefill-delayer.md): one question
// per pass, a "no" makes the pass decode-only, and every executed prefill re-arms the interval.
#include <string>

#include <gtest/gtest.h>

#include "fake_executor.h"
#include "sched/scheduler.h"

namespace paceline {
namespace {

using testing::FakeExecutor;
using testing::max_tokens;
using testing::prompt_of;
using testing::run_step;
using testing::small_config;

SchedulerConfig delayer_config(int64_t interval, ScheduleKind kind = ScheduleKind::kSeparate) {
  SchedulerConfig c = small_config();
  c.schedule = kind;
  c.max_model_len = 512;
  c.num_kv_blocks = 256;
  c.delayer.prefill_decode_interval = interval;
  c.delayer.target_fill = 0.05;  // release as soon as the interval is over
  return c;
}

// Kinds of the next n passes.
std::string kinds(Scheduler& s, const FakeExecutor& exec, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) {
    switch (run_step(s, exec).plan.kind) {
      case ForwardKind::kPrefill:
        out += 'P';
        break;
      case ForwardKind::kDecode:
        out += 'D';
        break;
      case ForwardKind::kMixed:
        out += 'M';
        break;
    }
  }
  return out;
}

class DelayerInterval : public ::testing::TestWithParam<int> {};

TEST_P(DelayerInterval, ExactlyNDecodeOnlyPassesFollowEachPrefillWhileSomethingWaits) {
  const int n = GetParam();
  VirtualClock clock;
  Scheduler s(delayer_config(n), clock);
  FakeExecutor exec;
  s.add_request(1, prompt_of(4, 1000), max_tokens(400));
  EXPECT_EQ(kinds(s, exec, 1), "P");  // the first decision always fires
  s.add_request(2, prompt_of(4, 2000), max_tokens(400));
  EXPECT_EQ(kinds(s, exec, n + 1), std::string(n, 'D') + "P");
  s.add_request(3, prompt_of(4, 3000), max_tokens(400));
  EXPECT_EQ(kinds(s, exec, n + 1), std::string(n, 'D') + "P");
  EXPECT_EQ(s.stats().delayer->hold_decode_interval, 2 * n);
}

TEST_P(DelayerInterval, ALongPromptInChunksAlternatesOneChunkThenNDecodePasses) {
  const int n = GetParam();
  SchedulerConfig c = delayer_config(n);
  c.long_prefill_token_threshold = 16;
  VirtualClock clock;
  Scheduler s(c, clock);
  FakeExecutor exec;
  s.add_request(1, prompt_of(4, 1000), max_tokens(400));
  kinds(s, exec, 1);
  s.add_request(2, prompt_of(64, 2000), max_tokens(4));  // four chunks of 16
  const std::string protected_decodes(n, 'D');
  EXPECT_EQ(kinds(s, exec, 4 * (n + 1)), protected_decodes + "P" + protected_decodes + "P" +
                                             protected_decodes + "P" + protected_decodes + "P");
}

TEST_P(DelayerInterval, WithNothingDecodingNoPassIsHeld) {
  const int n = GetParam();
  VirtualClock clock;
  Scheduler s(delayer_config(n), clock);
  FakeExecutor exec;
  s.add_request(1, prompt_of(150, 1000), max_tokens(1));  // three chunks, nothing else running
  EXPECT_EQ(kinds(s, exec, 3), "PPP");
  for (int id = 2; id < 6; ++id) {  // one-token requests: each finishes in its own prefill
    s.add_request(id, prompt_of(8, 1000 * id), max_tokens(1));
    EXPECT_EQ(kinds(s, exec, 1), "P");
  }
  EXPECT_EQ(s.stats().delayer->hold, 0);
}

INSTANTIATE_TEST_SUITE_P(N, DelayerInterval, ::testing::Values(3, 16));

TEST(Delayer, InMixedModeAHeldPassCarriesDecodeTokensOnly) {
  VirtualClock clock;
  Scheduler s(delayer_config(2, ScheduleKind::kMixed), clock);
  FakeExecutor exec;
  s.add_request(1, prompt_of(4, 1000), max_tokens(100));
  EXPECT_EQ(kinds(s, exec, 1), "P");
  s.add_request(2, prompt_of(4, 2000), max_tokens(100));
  EXPECT_EQ(kinds(s, exec, 3), "DDM");
}

TEST(Delayer, IsAskedExactlyOncePerPass) {
  VirtualClock clock;
  Scheduler s(delayer_config(3), clock);
  FakeExecutor exec;
  int passes = 0;
  s.add_request(1, prompt_of(4, 1000), max_tokens(20));
  for (int i = 0; i < 30 && s.has_unfinished(); ++i) {
    if (i % 5 == 0) s.add_request(100 + i, prompt_of(6, 100 * i), max_tokens(3));
    passes += run_step(s, exec).plan.seqs.empty() ? 0 : 1;
  }
  auto counters = *s.stats().delayer;
  EXPECT_EQ(counters.decisions, passes);
  EXPECT_EQ(counters.decisions,
            counters.hold + counters.fire_first + counters.fire_vacuous + counters.fire_nodecode +
                counters.fire_kv + counters.fire_queue_ms + counters.fire_ttft +
                counters.fire_partial + counters.fire_fill + counters.fire_stall);
}

TEST(Delayer, TheQueueAgeBoundReadsTheInjectedClock) {
  SchedulerConfig c = delayer_config(0);
  c.delayer.max_queue_ms = 5.0;
  c.delayer.target_fill = 1.0;
  c.delayer.stall_ticks = 1000;
  VirtualClock clock;
  Scheduler s(c, clock);
  FakeExecutor exec;
  s.add_request(1, prompt_of(4, 1000), max_tokens(100));
  kinds(s, exec, 1);
  s.add_request(2, prompt_of(4, 2000), max_tokens(100));
  std::string seen;
  for (int i = 0; i < 7; ++i) {
    seen += kinds(s, exec, 1);
    clock.advance_ns(1'000'000);
  }
  EXPECT_EQ(seen, "DDDDDPD");  // released on the pass where the wait reached 5 ms
  EXPECT_EQ(s.stats().delayer->fire_queue_ms, 1);
}

TEST(Delayer, ExistsOnlyWhenItHasSomethingToDo) {
  VirtualClock clock;
  Scheduler off(delayer_config(0), clock);
  EXPECT_EQ(off.delayer(), nullptr);
  EXPECT_FALSE(off.stats().delayer.has_value());
  SchedulerConfig disabled = delayer_config(4);
  disabled.delayer.enabled = false;
  EXPECT_EQ(Scheduler(disabled, clock).delayer(), nullptr);
  Scheduler on(delayer_config(4), clock);
  ASSERT_NE(on.delayer(), nullptr);
  EXPECT_NE(on.delayer()->describe().find("PrefillDelayer initialized"), std::string::npos);
  EXPECT_EQ(on.delayer()->config().max_num_batched_tokens, 64);  // the scheduler's budget
}

}  // namespace
}  // namespace paceline
