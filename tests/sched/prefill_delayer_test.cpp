// The PrefillDelayer against ../shared/specs/prefill-delayer.md: one test per stated property.
#include "sched/prefill_delayer.h"

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "base/error.h"
#include "sched/prefill_delayer_env.h"

namespace paceline {
namespace {

constexpr int64_t kBudget = 1000;  // max_num_batched_tokens in these tests

PrefillDelayerConfig config_with_interval(int64_t interval) {
  PrefillDelayerConfig c;
  c.prefill_decode_interval = interval;
  c.max_num_batched_tokens = kBudget;
  return c;
}

// Something waits (below the fill target) and something decodes; no release bound is near.
PrefillDelayerInputs waiting_and_decoding(int64_t pending = 100) {
  PrefillDelayerInputs in;
  in.prefillable = true;
  in.pending_tokens = pending;
  in.running_decode = 8;
  in.kv_usage = 0.5;
  return in;
}

PrefillDelayerInputs at_fill() {
  return waiting_and_decoding(kBudget);
}

int64_t total_fires(const PrefillDelayerCounters& n) {
  return n.fire_first + n.fire_vacuous + n.fire_nodecode + n.fire_kv + n.fire_queue_ms +
         n.fire_ttft + n.fire_partial + n.fire_fill + n.fire_stall;
}

// A delayer past its first decision (which always fires).
PrefillDelayer started(const PrefillDelayerConfig& config) {
  PrefillDelayer d(config);
  EXPECT_TRUE(d.allow_prefill(waiting_and_decoding()));
  EXPECT_EQ(d.counters().fire_first, 1);
  return d;
}

// --- The decode interval, N = 3 and N = 16 ----------------------------------------------------

class PrefillDelayerInterval : public ::testing::TestWithParam<int64_t> {};

TEST_P(PrefillDelayerInterval, ExactlyNPassesAfterAPrefillAreDecodeOnly) {
  const int64_t n = GetParam();
  PrefillDelayer d = started(config_with_interval(n));
  for (int round = 0; round < 3; ++round) {
    d.on_prefill_ran();
    for (int64_t pass = 0; pass < n; ++pass) {
      EXPECT_FALSE(d.allow_prefill(at_fill())) << "round " << round << " pass " << pass;
    }
    EXPECT_TRUE(d.allow_prefill(at_fill())) << "round " << round;
  }
  EXPECT_EQ(d.counters().hold_decode_interval, 3 * n);
  EXPECT_EQ(d.counters().hold, 3 * n);
  EXPECT_EQ(d.counters().fire_fill, 3);
}

TEST_P(PrefillDelayerInterval, IsCheckedBeforeEveryReleaseBound) {
  const int64_t n = GetParam();
  auto config = config_with_interval(n);
  config.max_queue_ms = 100;
  config.kv_low = 0.2;
  config.ttft_max_ticks = 1;
  config.partial_max_ticks = 1;
  config.stall_ticks = 1;

  // Each input would release prefill at once outside the interval.
  std::map<std::string, PrefillDelayerInputs> forcing;
  forcing["kv_high"] = waiting_and_decoding();
  forcing["kv_high"].kv_usage = 0.99;
  forcing["kv_low"] = waiting_and_decoding();
  forcing["kv_low"].kv_usage = 0.1;
  forcing["queue_ms"] = waiting_and_decoding();
  forcing["queue_ms"].oldest_wait_ms = 1e9;  // the queue-age bound is no hard TTFT limit
  forcing["ttft"] = waiting_and_decoding();
  forcing["partial"] = waiting_and_decoding();
  forcing["partial"].has_partial = true;
  forcing["fill"] = at_fill();
  forcing["stall"] = waiting_and_decoding(0);

  for (const auto& [name, in] : forcing) {
    PrefillDelayer d = started(config);
    // One coalescing hold first, so that hold_ticks (1) already meets the tick bounds.
    EXPECT_FALSE(d.allow_prefill(waiting_and_decoding(50)));
    d.on_prefill_ran();
    for (int64_t pass = 0; pass < n; ++pass) {
      EXPECT_FALSE(d.allow_prefill(in)) << name << " pass " << pass;
    }
    EXPECT_EQ(d.counters().hold_decode_interval, n) << name;
    EXPECT_TRUE(d.allow_prefill(in)) << name;
  }
}

TEST_P(PrefillDelayerInterval, LongPromptInChunksAlternatesOneChunkThenNDecodePasses) {
  const int64_t n = GetParam();
  PrefillDelayer d(config_with_interval(n));
  // A prompt of exactly 5 budgets: each chunk is one full budget, so pending is always at fill.
  int64_t remaining = 5 * kBudget;
  std::string timeline;
  while (remaining > 0) {
    PrefillDelayerInputs in = waiting_and_decoding(std::min(remaining, kBudget));
    in.has_partial = remaining < 5 * kBudget;
    if (d.allow_prefill(in)) {
      remaining -= kBudget;  // the scheduler runs one chunk
      d.on_prefill_ran();
      timeline += 'P';
    } else {
      timeline += 'D';
    }
  }
  std::string expected = "P";
  for (int chunk = 1; chunk < 5; ++chunk) expected += std::string(n, 'D') + "P";
  EXPECT_EQ(timeline, expected);
}

TEST_P(PrefillDelayerInterval, CountsDownOnEveryPassEvenWhenNotHolding) {
  const int64_t n = GetParam();
  PrefillDelayer d = started(config_with_interval(n));
  d.on_prefill_ran();
  PrefillDelayerInputs idle;  // nothing waiting
  idle.running_decode = 8;
  EXPECT_TRUE(d.allow_prefill(idle));
  EXPECT_TRUE(d.allow_prefill(idle));
  for (int64_t pass = 2; pass < n; ++pass) EXPECT_FALSE(d.allow_prefill(at_fill()));
  EXPECT_TRUE(d.allow_prefill(at_fill()));
  EXPECT_EQ(d.counters().hold_decode_interval, n - 2);
  EXPECT_EQ(d.counters().fire_vacuous, 2);
}

INSTANTIATE_TEST_SUITE_P(PrefillDelayer, PrefillDelayerInterval, ::testing::Values(3, 16));

// --- Nothing decoding ---------------------------------------------------------------------------

TEST(PrefillDelayerTest, WithNothingDecodingNoPassIsEverHeld) {
  auto config = config_with_interval(16);
  config.max_queue_ms = 1;
  PrefillDelayer d(config);
  std::mt19937_64 rng(7);
  for (int pass = 0; pass < 10000; ++pass) {
    PrefillDelayerInputs in;
    in.prefillable = rng() % 4 != 0;
    in.pending_tokens = static_cast<int64_t>(rng() % (2 * kBudget));
    in.running_decode = 0;
    in.kv_usage = static_cast<double>(rng() % 100) / 100.0;
    in.has_partial = rng() % 2 == 0;
    in.oldest_wait_ms = static_cast<double>(rng() % 10);
    ASSERT_TRUE(d.allow_prefill(in)) << "pass " << pass;
    if (in.prefillable) d.on_prefill_ran();
  }
  EXPECT_EQ(d.counters().hold, 0);
}

// --- Counters -----------------------------------------------------------------------------------

TEST(PrefillDelayerTest, EveryDecisionIsExactlyOneFireOrOneHold) {
  auto config = config_with_interval(4);
  config.max_queue_ms = 50;
  config.kv_low = 0.1;
  config.ttft_max_ticks = 20;
  config.partial_max_ticks = 8;
  config.stall_ticks = 5;
  PrefillDelayer d(config);
  std::mt19937_64 rng(12345);
  auto one_in = [&rng](uint64_t n) { return rng() % n == 0; };
  int64_t pending = 0;  // a queue that mostly grows slowly, so holds form long episodes
  for (int pass = 0; pass < 100000; ++pass) {
    pending = one_in(50) ? 0 : pending + static_cast<int64_t>(rng() % 40) - 5;
    pending = std::clamp<int64_t>(pending, 0, kBudget);
    PrefillDelayerInputs in;
    in.prefillable = !one_in(40);
    in.pending_tokens = pending;
    in.running_decode = one_in(40) ? 0 : 4;
    in.kv_usage = one_in(60) ? 0.95 : (one_in(60) ? 0.05 : 0.5);
    in.has_partial = one_in(3);
    in.oldest_wait_ms = one_in(80) ? 60 : 1;
    const PrefillDelayerCounters before = d.counters();
    const bool allowed = d.allow_prefill(in);
    const PrefillDelayerCounters& after = d.counters();
    ASSERT_EQ(after.decisions, before.decisions + 1);
    ASSERT_EQ(total_fires(after) - total_fires(before), allowed ? 1 : 0) << "pass " << pass;
    ASSERT_EQ(after.hold - before.hold, allowed ? 0 : 1) << "pass " << pass;
    if (allowed && rng() % 2 == 0) d.on_prefill_ran();
  }
  const auto& n = d.counters();
  EXPECT_EQ(n.decisions, total_fires(n) + n.hold);
  EXPECT_LE(n.hold_decode_interval, n.hold);
  EXPECT_DOUBLE_EQ(n.hold_rate(), static_cast<double>(n.hold) / static_cast<double>(n.decisions));
  // The random mix reaches every reason.
  EXPECT_EQ(n.fire_first, 1);
  const std::map<std::string, int64_t> reached = {{"vacuous", n.fire_vacuous},
                                                  {"nodecode", n.fire_nodecode},
                                                  {"kv", n.fire_kv},
                                                  {"queue_ms", n.fire_queue_ms},
                                                  {"ttft", n.fire_ttft},
                                                  {"partial", n.fire_partial},
                                                  {"fill", n.fire_fill},
                                                  {"stall", n.fire_stall},
                                                  {"interval", n.hold_decode_interval}};
  for (const auto& [reason, count] : reached) EXPECT_GT(count, 0) << reason;
}

TEST(PrefillDelayerTest, HoldRateIsZeroBeforeAnyDecision) {
  PrefillDelayer d(config_with_interval(2));
  EXPECT_EQ(d.counters().hold_rate(), 0.0);
}

// --- Each FIRE reason ---------------------------------------------------------------------------

TEST(PrefillDelayerTest, FirstDecisionFiresWhateverTheInputs) {
  PrefillDelayer d(config_with_interval(3));
  d.on_prefill_ran();
  EXPECT_TRUE(d.allow_prefill(waiting_and_decoding()));
  EXPECT_EQ(d.counters().fire_first, 1);
  EXPECT_EQ(d.counters().decisions, 1);
}

TEST(PrefillDelayerTest, FiresVacuousWhenNothingIsPrefillable) {
  PrefillDelayer d = started(config_with_interval(3));
  PrefillDelayerInputs in = waiting_and_decoding();
  in.prefillable = false;
  EXPECT_TRUE(d.allow_prefill(in));
  EXPECT_EQ(d.counters().fire_vacuous, 1);
}

TEST(PrefillDelayerTest, FiresNodecodeWhenNothingDecodes) {
  PrefillDelayer d = started(config_with_interval(3));
  PrefillDelayerInputs in = waiting_and_decoding();
  in.running_decode = 0;
  EXPECT_TRUE(d.allow_prefill(in));
  EXPECT_EQ(d.counters().fire_nodecode, 1);
}

TEST(PrefillDelayerTest, FiresKvAtOrAboveTheHighWatermark) {
  PrefillDelayer d = started(config_with_interval(3));
  PrefillDelayerInputs in = waiting_and_decoding();
  in.kv_usage = 0.89;
  EXPECT_FALSE(d.allow_prefill(in));
  in.kv_usage = 0.9;
  EXPECT_TRUE(d.allow_prefill(in));
  EXPECT_EQ(d.counters().fire_kv, 1);
}

TEST(PrefillDelayerTest, FiresKvBelowTheLowWatermarkOnlyWhenSet) {
  PrefillDelayerInputs in = waiting_and_decoding();
  in.kv_usage = 0.05;
  PrefillDelayer unset = started(config_with_interval(3));
  EXPECT_FALSE(unset.allow_prefill(in));

  auto config = config_with_interval(3);
  config.kv_low = 0.1;
  PrefillDelayer d = started(config);
  EXPECT_TRUE(d.allow_prefill(in));
  EXPECT_EQ(d.counters().fire_kv, 1);
  in.kv_usage = 0.1;
  EXPECT_FALSE(d.allow_prefill(in));
}

TEST(PrefillDelayerTest, FiresQueueMsWhenTheOldestWaiterIsOldEnough) {
  PrefillDelayerInputs in = waiting_and_decoding();
  in.oldest_wait_ms = 1e9;
  PrefillDelayer unset = started(config_with_interval(3));
  EXPECT_FALSE(unset.allow_prefill(in));  // no limit configured: the age is not read

  auto config = config_with_interval(3);
  config.max_queue_ms = 500;
  PrefillDelayer d = started(config);
  in.oldest_wait_ms = 499.9;
  EXPECT_FALSE(d.allow_prefill(in));
  in.oldest_wait_ms = 500;
  EXPECT_TRUE(d.allow_prefill(in));
  EXPECT_EQ(d.counters().fire_queue_ms, 1);
}

TEST(PrefillDelayerTest, FiresTtftAfterTtftMaxTicksHolds) {
  auto config = config_with_interval(3);
  config.ttft_max_ticks = 5;
  config.stall_ticks = 1000;
  PrefillDelayer d = started(config);
  for (int pass = 0; pass < 5; ++pass) EXPECT_FALSE(d.allow_prefill(waiting_and_decoding(pass)));
  EXPECT_TRUE(d.allow_prefill(waiting_and_decoding(5)));
  EXPECT_EQ(d.counters().fire_ttft, 1);
  EXPECT_EQ(d.counters().hold, 5);
}

TEST(PrefillDelayerTest, FiresPartialAfterPartialMaxTicksHoldsWithAChunkInFlight) {
  auto config = config_with_interval(3);
  config.partial_max_ticks = 3;
  config.stall_ticks = 1000;
  PrefillDelayer d = started(config);
  for (int pass = 0; pass < 3; ++pass) {
    PrefillDelayerInputs in = waiting_and_decoding(pass);
    in.has_partial = true;
    EXPECT_FALSE(d.allow_prefill(in));
  }
  PrefillDelayerInputs in = waiting_and_decoding(3);
  in.has_partial = false;  // without a chunk in flight the partial bound does not apply
  EXPECT_FALSE(d.allow_prefill(in));
  in.has_partial = true;
  EXPECT_TRUE(d.allow_prefill(in));
  EXPECT_EQ(d.counters().fire_partial, 1);
}

TEST(PrefillDelayerTest, FiresFillAtTargetFillOfTheBudget) {
  PrefillDelayer d = started(config_with_interval(3));  // target 0.9 of 1000 tokens
  EXPECT_FALSE(d.allow_prefill(waiting_and_decoding(899)));
  EXPECT_TRUE(d.allow_prefill(waiting_and_decoding(900)));
  EXPECT_EQ(d.counters().fire_fill, 1);
}

TEST(PrefillDelayerTest, FiresStallAfterStallTicksPassesOfANonGrowingQueue) {
  auto config = config_with_interval(3);
  config.stall_ticks = 3;
  PrefillDelayer d = started(config);
  EXPECT_FALSE(d.allow_prefill(waiting_and_decoding(100)));  // first sample: stall 0
  EXPECT_FALSE(d.allow_prefill(waiting_and_decoding(100)));  // 1
  EXPECT_FALSE(d.allow_prefill(waiting_and_decoding(90)));   // 2 (shrinking counts)
  EXPECT_TRUE(d.allow_prefill(waiting_and_decoding(90)));    // 3
  EXPECT_EQ(d.counters().fire_stall, 1);
}

TEST(PrefillDelayerTest, AGrowingQueueRestartsTheStallCount) {
  auto config = config_with_interval(3);
  config.stall_ticks = 2;
  PrefillDelayer d = started(config);
  EXPECT_FALSE(d.allow_prefill(waiting_and_decoding(100)));
  EXPECT_FALSE(d.allow_prefill(waiting_and_decoding(100)));  // stall 1
  EXPECT_FALSE(d.allow_prefill(waiting_and_decoding(101)));  // grew: stall 0
  EXPECT_FALSE(d.allow_prefill(waiting_and_decoding(101)));  // stall 1
  EXPECT_TRUE(d.allow_prefill(waiting_and_decoding(101)));   // stall 2
  EXPECT_EQ(d.counters().fire_stall, 1);
}

// --- Reset semantics ----------------------------------------------------------------------------

TEST(PrefillDelayerTest, AFireResetsHoldTicks) {
  auto config = config_with_interval(3);
  config.ttft_max_ticks = 3;
  config.stall_ticks = 1000;
  PrefillDelayer d = started(config);
  EXPECT_FALSE(d.allow_prefill(waiting_and_decoding(1)));
  EXPECT_FALSE(d.allow_prefill(waiting_and_decoding(2)));
  EXPECT_TRUE(d.allow_prefill(at_fill()));  // reset: hold_ticks = 0
  for (int pass = 0; pass < 3; ++pass) EXPECT_FALSE(d.allow_prefill(waiting_and_decoding(pass)));
  EXPECT_TRUE(d.allow_prefill(waiting_and_decoding(3)));
  EXPECT_EQ(d.counters().fire_ttft, 1);
}

TEST(PrefillDelayerTest, AFireResetsStallAndPrevPending) {
  auto config = config_with_interval(3);
  config.stall_ticks = 2;
  PrefillDelayer d = started(config);
  EXPECT_FALSE(d.allow_prefill(waiting_and_decoding(100)));  // stall 0, prev 100
  EXPECT_FALSE(d.allow_prefill(waiting_and_decoding(100)));  // stall 1
  PrefillDelayerInputs idle = waiting_and_decoding();
  idle.prefillable = false;
  EXPECT_TRUE(d.allow_prefill(idle));  // vacuous: reset
  // prev_pending is unset again, so an equal queue is a first sample, not a stall.
  EXPECT_FALSE(d.allow_prefill(waiting_and_decoding(100)));  // stall 0
  EXPECT_FALSE(d.allow_prefill(waiting_and_decoding(100)));  // stall 1
  EXPECT_TRUE(d.allow_prefill(waiting_and_decoding(100)));   // stall 2
  EXPECT_EQ(d.counters().fire_stall, 1);
}

TEST(PrefillDelayerTest, NodecodeFireResetsHoldTicks) {
  auto config = config_with_interval(3);
  config.ttft_max_ticks = 2;
  config.stall_ticks = 1000;
  PrefillDelayer d = started(config);
  EXPECT_FALSE(d.allow_prefill(waiting_and_decoding(1)));
  PrefillDelayerInputs alone = waiting_and_decoding(2);
  alone.running_decode = 0;
  EXPECT_TRUE(d.allow_prefill(alone));
  EXPECT_FALSE(d.allow_prefill(waiting_and_decoding(3)));
  EXPECT_FALSE(d.allow_prefill(waiting_and_decoding(4)));
  EXPECT_TRUE(d.allow_prefill(waiting_and_decoding(5)));
  EXPECT_EQ(d.counters().fire_ttft, 1);
}

TEST(PrefillDelayerTest, IntervalHoldsDoNotAdvanceHoldTicks) {
  auto config = config_with_interval(3);
  config.ttft_max_ticks = 1;
  config.stall_ticks = 1000;
  PrefillDelayer d = started(config);
  d.on_prefill_ran();
  for (int pass = 0; pass < 3; ++pass) EXPECT_FALSE(d.allow_prefill(waiting_and_decoding(pass)));
  EXPECT_FALSE(d.allow_prefill(waiting_and_decoding(10)));  // hold_ticks 0 -> 1
  EXPECT_TRUE(d.allow_prefill(waiting_and_decoding(11)));   // hold_ticks 1 >= 1
  EXPECT_EQ(d.counters().fire_ttft, 1);
  EXPECT_EQ(d.counters().hold_decode_interval, 3);
  EXPECT_EQ(d.counters().hold, 4);
}

TEST(PrefillDelayerTest, APrefillDuringTheIntervalRearmsIt) {
  PrefillDelayer d = started(config_with_interval(3));
  d.on_prefill_ran();
  EXPECT_FALSE(d.allow_prefill(at_fill()));
  d.on_prefill_ran();  // e.g. a chunk finished in a mixed pass
  for (int pass = 0; pass < 3; ++pass) EXPECT_FALSE(d.allow_prefill(at_fill()));
  EXPECT_TRUE(d.allow_prefill(at_fill()));
}

// --- Validation and the init line ---------------------------------------------------------------

TEST(PrefillDelayerTest, NegativeIntervalIsAnError) {
  EXPECT_THROW(PrefillDelayer(config_with_interval(-1)), Error);
}

TEST(PrefillDelayerTest, NegativeQueueLimitIsAnError) {
  auto config = config_with_interval(1);
  config.max_queue_ms = -5;
  EXPECT_THROW(PrefillDelayer{config}, Error);
}

TEST(PrefillDelayerTest, TickBoundsBelowOneBecomeOneAndTargetFillIsClamped) {
  auto config = config_with_interval(1);
  config.ttft_max_ticks = 0;
  config.partial_max_ticks = -3;
  config.stall_ticks = 0;
  config.target_fill = 0.001;
  PrefillDelayer low(config);
  EXPECT_EQ(low.config().ttft_max_ticks, 1);
  EXPECT_EQ(low.config().partial_max_ticks, 1);
  EXPECT_EQ(low.config().stall_ticks, 1);
  EXPECT_DOUBLE_EQ(low.config().target_fill, 0.05);
  config.target_fill = 3.0;
  EXPECT_DOUBLE_EQ(PrefillDelayer(config).config().target_fill, 1.0);
}

TEST(PrefillDelayerTest, IsActiveWhenEnabledWithAnIntervalOrAQueueLimit) {
  PrefillDelayerConfig c;
  EXPECT_FALSE(c.active());
  c.prefill_decode_interval = 4;
  EXPECT_TRUE(c.active());
  c.enabled = false;
  EXPECT_FALSE(c.active());
  c.enabled = true;
  c.prefill_decode_interval = 0;
  c.max_queue_ms = 5000;
  EXPECT_TRUE(c.active());
}

TEST(PrefillDelayerTest, DescribeIsTheInitLineWithEveryEffectiveValue) {
  auto config = config_with_interval(4);
  config.max_queue_ms = 5000;
  config.stall_ticks = 0;
  EXPECT_EQ(PrefillDelayer(config).describe(),
            "PrefillDelayer initialized enabled=true interval=4 max_queue_ms=5000 "
            "target_fill=0.9 ttft_max_ticks=200 partial_max_ticks=100 stall_ticks=1 kv_high=0.9 "
            "kv_low=none max_num_batched_tokens=1000");
}

TEST(PrefillDelayerTest, StatsLineIsDueEveryThousandDecisions) {
  PrefillDelayer d(config_with_interval(1));
  for (int pass = 1; pass <= 2500; ++pass) {
    d.allow_prefill(waiting_and_decoding());
    const auto line = d.stats_line_if_due();
    EXPECT_EQ(line.has_value(), pass == 1000 || pass == 2000) << "pass " << pass;
    if (line) {
      EXPECT_EQ(line->rfind("PrefillDelayer stats decisions=", 0), 0u) << *line;
    }
  }
  const auto& n = d.counters();
  EXPECT_NE(d.stats_line().find(
                fmt::format("decisions=2500 hold={} hold_rate={:.3f}", n.hold, n.hold_rate())),
            std::string::npos)
      << d.stats_line();
}

// --- Knobs from flags and ATOM's environment variables ------------------------------------------

// An environment made of a map, so tests never touch the process's own.
struct FakeEnv {
  std::map<std::string, std::string> vars;
  EnvLookup lookup() const {
    return [this](const char* name) -> const char* {
      const auto it = vars.find(name);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
  }
};

TEST(PrefillDelayerEnv, DefaultsWhenNothingIsGiven) {
  PrefillDelayerSources sources;
  const auto c = resolve_prefill_delayer_config({}, FakeEnv{}.lookup(), sources);
  EXPECT_TRUE(c.enabled);
  EXPECT_EQ(c.prefill_decode_interval, 0);
  EXPECT_FALSE(c.max_queue_ms.has_value());
  EXPECT_DOUBLE_EQ(c.target_fill, 0.9);
  EXPECT_EQ(c.ttft_max_ticks, 200);
  EXPECT_EQ(c.partial_max_ticks, 100);
  EXPECT_EQ(c.stall_ticks, 10);
  EXPECT_DOUBLE_EQ(c.kv_high, 0.9);
  EXPECT_FALSE(c.kv_low.has_value());
  EXPECT_FALSE(c.active());
  EXPECT_EQ(sources.prefill_decode_interval, KnobSource::kDefault);
  EXPECT_EQ(sources.kv_low, KnobSource::kDefault);
}

TEST(PrefillDelayerEnv, ReadsEveryAtomVariable) {
  FakeEnv env;
  env.vars = {{"ATOM_ENABLE_PREFILL_DELAYER", "1"},
              {"ATOM_PREFILL_DECODE_INTERVAL", "4"},
              {"ATOM_PREFILL_DELAYER_MAX_QUEUE_MS", "5000"},
              {"ATOM_PREFILL_DELAYER_TARGET_FILL", "0.75"},
              {"ATOM_PREFILL_DELAYER_TTFT_MAX_TICKS", "300"},
              {"ATOM_PREFILL_DELAYER_PARTIAL_MAX_TICKS", "50"},
              {"ATOM_PREFILL_DELAYER_STALL_TICKS", "7"},
              {"ATOM_PREFILL_DELAYER_KV_HIGH_WATERMARK", "0.95"},
              {"ATOM_PREFILL_DELAYER_TOKEN_USAGE_LOW_WATERMARK", "0.2"}};
  PrefillDelayerSources sources;
  const auto c = resolve_prefill_delayer_config({}, env.lookup(), sources);
  EXPECT_TRUE(c.enabled);
  EXPECT_EQ(c.prefill_decode_interval, 4);
  EXPECT_EQ(c.max_queue_ms, 5000.0);
  EXPECT_DOUBLE_EQ(c.target_fill, 0.75);
  EXPECT_EQ(c.ttft_max_ticks, 300);
  EXPECT_EQ(c.partial_max_ticks, 50);
  EXPECT_EQ(c.stall_ticks, 7);
  EXPECT_DOUBLE_EQ(c.kv_high, 0.95);
  EXPECT_EQ(c.kv_low, 0.2);
  for (KnobSource s : {sources.enabled, sources.prefill_decode_interval, sources.max_queue_ms,
                       sources.target_fill, sources.ttft_max_ticks, sources.partial_max_ticks,
                       sources.stall_ticks, sources.kv_high, sources.kv_low}) {
    EXPECT_EQ(s, KnobSource::kEnv);
  }
}

TEST(PrefillDelayerEnv, BooleansAcceptTheUsualSpellingsInAnyCase) {
  for (const char* on : {"1", "true", "TRUE", "Yes", "on", "ON"}) {
    FakeEnv env;
    env.vars["ATOM_ENABLE_PREFILL_DELAYER"] = on;
    EXPECT_TRUE(resolve_prefill_delayer_config({}, env.lookup()).enabled) << on;
  }
  for (const char* off : {"0", "false", "False", "no", "NO", "off", "Off"}) {
    FakeEnv env;
    env.vars["ATOM_ENABLE_PREFILL_DELAYER"] = off;
    EXPECT_FALSE(resolve_prefill_delayer_config({}, env.lookup()).enabled) << off;
  }
}

TEST(PrefillDelayerEnv, MalformedValuesNameTheVariableAndTheValue) {
  const std::map<std::string, std::string> bad = {
      {"ATOM_ENABLE_PREFILL_DELAYER", "maybe"},
      {"ATOM_PREFILL_DECODE_INTERVAL", "4.5"},
      {"ATOM_PREFILL_DELAYER_MAX_QUEUE_MS", "5s"},
      {"ATOM_PREFILL_DELAYER_TARGET_FILL", "most"},
      {"ATOM_PREFILL_DELAYER_TTFT_MAX_TICKS", "lots"},
      {"ATOM_PREFILL_DELAYER_PARTIAL_MAX_TICKS", "1e3"},
      {"ATOM_PREFILL_DELAYER_STALL_TICKS", "ten"},
      {"ATOM_PREFILL_DELAYER_KV_HIGH_WATERMARK", "nan"},
      {"ATOM_PREFILL_DELAYER_TOKEN_USAGE_LOW_WATERMARK", "0.2.1"},
  };
  for (const auto& [name, value] : bad) {
    FakeEnv env;
    env.vars[name] = value;
    try {
      resolve_prefill_delayer_config({}, env.lookup());
      ADD_FAILURE() << name << "=" << value << " was accepted";
    } catch (const Error& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find(name), std::string::npos) << message;
      EXPECT_NE(message.find("'" + value + "'"), std::string::npos) << message;
    }
  }
}

TEST(PrefillDelayerEnv, ANegativeIntervalFromTheEnvironmentIsAnErrorNamingIt) {
  FakeEnv env;
  env.vars["ATOM_PREFILL_DECODE_INTERVAL"] = "-1";
  EXPECT_THROW(
      {
        try {
          resolve_prefill_delayer_config({}, env.lookup());
        } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find("ATOM_PREFILL_DECODE_INTERVAL"), std::string::npos);
          throw;
        }
      },
      Error);
  PrefillDelayerFlags flags;
  flags.prefill_decode_interval = -2;
  EXPECT_THROW(resolve_prefill_delayer_config(flags, FakeEnv{}.lookup()), Error);
}

TEST(PrefillDelayerEnv, AnEmptyValueCountsAsUnset) {
  FakeEnv env;
  env.vars = {{"ATOM_PREFILL_DELAYER_MAX_QUEUE_MS", ""}, {"ATOM_PREFILL_DECODE_INTERVAL", " "}};
  PrefillDelayerSources sources;
  const auto c = resolve_prefill_delayer_config({}, env.lookup(), sources);
  EXPECT_FALSE(c.max_queue_ms.has_value());
  EXPECT_EQ(c.prefill_decode_interval, 0);
  EXPECT_EQ(sources.max_queue_ms, KnobSource::kDefault);
}

TEST(PrefillDelayerEnv, AFlagWinsOverTheEnvironment) {
  FakeEnv env;
  env.vars = {{"ATOM_ENABLE_PREFILL_DELAYER", "1"},
              {"ATOM_PREFILL_DECODE_INTERVAL", "4"},
              {"ATOM_PREFILL_DELAYER_MAX_QUEUE_MS", "5000"},
              {"ATOM_PREFILL_DELAYER_STALL_TICKS", "7"},
              {"ATOM_PREFILL_DELAYER_TOKEN_USAGE_LOW_WATERMARK", "0.2"}};
  PrefillDelayerFlags flags;
  flags.enabled = false;
  flags.prefill_decode_interval = 16;
  flags.kv_low = 0.3;
  flags.ttft_max_ticks = 42;
  PrefillDelayerSources sources;
  const auto c = resolve_prefill_delayer_config(flags, env.lookup(), sources);
  EXPECT_FALSE(c.enabled);
  EXPECT_EQ(c.prefill_decode_interval, 16);
  EXPECT_EQ(c.kv_low, 0.3);
  EXPECT_EQ(c.ttft_max_ticks, 42);
  EXPECT_EQ(c.max_queue_ms, 5000.0);  // no flag: the environment's value stands
  EXPECT_EQ(c.stall_ticks, 7);
  EXPECT_EQ(sources.enabled, KnobSource::kFlag);
  EXPECT_EQ(sources.prefill_decode_interval, KnobSource::kFlag);
  EXPECT_EQ(sources.kv_low, KnobSource::kFlag);
  EXPECT_EQ(sources.ttft_max_ticks, KnobSource::kFlag);
  EXPECT_EQ(sources.max_queue_ms, KnobSource::kEnv);
  EXPECT_EQ(sources.stall_ticks, KnobSource::kEnv);
  EXPECT_EQ(sources.target_fill, KnobSource::kDefault);
}

TEST(PrefillDelayerEnv, ResolvedValuesAreNormalized) {
  FakeEnv env;
  env.vars = {{"ATOM_PREFILL_DELAYER_TARGET_FILL", "0"}, {"ATOM_PREFILL_DELAYER_STALL_TICKS", "0"}};
  const auto c = resolve_prefill_delayer_config({}, env.lookup());
  EXPECT_DOUBLE_EQ(c.target_fill, 0.05);
  EXPECT_EQ(c.stall_ticks, 1);
}

TEST(PrefillDelayerEnv, TheInitLineSaysWhereEachValueCameFrom) {
  FakeEnv env;
  env.vars = {{"ATOM_PREFILL_DECODE_INTERVAL", "4"}, {"ATOM_PREFILL_DELAYER_MAX_QUEUE_MS", "5000"}};
  PrefillDelayerFlags flags;
  flags.stall_ticks = 12;
  PrefillDelayerSources sources;
  auto config = resolve_prefill_delayer_config(flags, env.lookup(), sources);
  config.max_num_batched_tokens = 8192;
  ASSERT_TRUE(config.active());
  EXPECT_EQ(PrefillDelayer(config).describe(sources),
            "PrefillDelayer initialized enabled=true(default) interval=4(env) "
            "max_queue_ms=5000(env) target_fill=0.9(default) ttft_max_ticks=200(default) "
            "partial_max_ticks=100(default) stall_ticks=12(flag) kv_high=0.9(default) "
            "kv_low=none(default) max_num_batched_tokens=8192");
}

TEST(PrefillDelayerEnv, KnobSourceNames) {
  EXPECT_EQ(knob_source_name(KnobSource::kFlag), "flag");
  EXPECT_EQ(knob_source_name(KnobSource::kEnv), "env");
  EXPECT_EQ(knob_source_name(KnobSource::kDefault), "default");
}

}  // namespace
}  // namespace paceline
