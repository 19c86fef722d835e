// Synthetic speculative acceptance: configuration, bounds, mean, determinism.
#include "sched/spec_acceptance.h"

#include <cmath>
#include <string>

#include <gtest/gtest.h>

#include "base/error.h"

namespace paceline {
namespace {

SpecAcceptance with_length(int32_t k, double al) {
  SpecAcceptanceConfig c;
  c.speculative_tokens = k;
  c.acceptance_length = al;
  return SpecAcceptance(c);
}

SpecAcceptance with_rate(int32_t k, double rate) {
  SpecAcceptanceConfig c;
  c.speculative_tokens = k;
  c.acceptance_rate = rate;
  return SpecAcceptance(c);
}

double mean_committed(const SpecAcceptance& spec, uint64_t steps, uint64_t request_id) {
  double total = 0;
  for (uint64_t step = 0; step < steps; ++step) {
    total += spec.accepted_tokens(spec_step_seed(2024, step), request_id);
  }
  return total / static_cast<double>(steps);
}

TEST(SpecAccept, CommitsFloorOrFloorPlusOneTokensNeverAboveKPlusOne) {
  for (const double al : {1.0, 1.3, 2.0, 2.5, 3.7, 4.0}) {
    const SpecAcceptance spec = with_length(3, al);
    const int32_t lo = static_cast<int32_t>(std::floor(al));
    for (uint64_t step = 0; step < 10000; ++step) {
      const int32_t n = spec.accepted_tokens(spec_step_seed(1, step), step % 7);
      ASSERT_GE(n, lo) << "AL " << al;
      ASSERT_LE(n, std::min(lo + 1, 4)) << "AL " << al;
    }
  }
}

TEST(SpecAccept, MeanOverManyStepsIsWithinOnePercentOfAL) {
  for (const double al : {1.25, 1.5, 2.2, 2.8, 3.5, 4.9}) {
    const SpecAcceptance spec = with_length(4, al);
    for (uint64_t request = 0; request < 3; ++request) {
      const double mean = mean_committed(spec, 100000, request);
      EXPECT_NEAR(mean, al, 0.01 * al) << "AL " << al << " request " << request;
    }
  }
}

TEST(SpecAccept, IntegralALCommitsExactlyAL) {
  const SpecAcceptance spec = with_length(3, 3.0);
  for (uint64_t step = 0; step < 1000; ++step) {
    EXPECT_EQ(spec.accepted_tokens(spec_step_seed(9, step), 5), 3);
  }
}

TEST(SpecAccept, IsAPureFunctionOfStepSeedAndRequest) {
  const SpecAcceptance a = with_length(4, 2.5);
  const SpecAcceptance b = with_length(4, 2.5);
  int differ_by_request = 0;
  for (uint64_t step = 0; step < 1000; ++step) {
    const uint64_t seed = spec_step_seed(77, step);
    EXPECT_EQ(a.accepted_tokens(seed, 11), a.accepted_tokens(seed, 11));
    EXPECT_EQ(a.accepted_tokens(seed, 11), b.accepted_tokens(seed, 11));
    differ_by_request += a.accepted_tokens(seed, 11) != a.accepted_tokens(seed, 12);
  }
  EXPECT_GT(differ_by_request, 300);  // sequences in one step draw independently
  EXPECT_EQ(spec_step_seed(77, 3), spec_step_seed(77, 3));
  EXPECT_NE(spec_step_seed(77, 3), spec_step_seed(77, 4));
  EXPECT_NE(spec_step_seed(77, 3), spec_step_seed(78, 3));
}

TEST(SpecAccept, ZeroSpeculativeTokensAlwaysCommitsOne) {
  const SpecAcceptance plain{SpecAcceptanceConfig{}};
  const SpecAcceptance by_rate = with_rate(0, 0.8);
  const SpecAcceptance by_length = with_length(0, 1.0);
  for (const SpecAcceptance* spec : {&plain, &by_rate, &by_length}) {
    EXPECT_EQ(spec->tokens_per_forward(), 1);
    EXPECT_DOUBLE_EQ(spec->acceptance_length(), 1.0);
    for (uint64_t step = 0; step < 1000; ++step) {
      EXPECT_EQ(spec->accepted_tokens(spec_step_seed(3, step), step), 1);
    }
  }
}

TEST(SpecAccept, RateAndLengthConfigureTheSameAcceptance) {
  for (const int32_t k : {1, 2, 3, 4, 7}) {
    for (const double rate : {0.0, 0.1, 0.35, 0.5, 0.7, 0.9, 1.0}) {
      const SpecAcceptance by_rate = with_rate(k, rate);
      const SpecAcceptance by_length = with_length(k, 1.0 + k * rate);
      EXPECT_NEAR(by_rate.acceptance_length(), by_length.acceptance_length(), 1e-12);
      for (uint64_t step = 0; step < 2000; ++step) {
        const uint64_t seed = spec_step_seed(5, step);
        ASSERT_EQ(by_rate.accepted_tokens(seed, 1), by_length.accepted_tokens(seed, 1))
            << "k " << k << " rate " << rate;
      }
    }
  }
}

TEST(SpecAccept, PerPositionAcceptanceIsOneThenTheFractionThenZero) {
  const SpecAcceptance spec = with_length(5, 3.25);  // 2.25 drafts on average
  EXPECT_EQ(spec.tokens_per_forward(), 6);
  EXPECT_DOUBLE_EQ(spec.position_acceptance(0), 1.0);
  EXPECT_DOUBLE_EQ(spec.position_acceptance(1), 1.0);
  EXPECT_DOUBLE_EQ(spec.position_acceptance(2), 0.25);
  EXPECT_DOUBLE_EQ(spec.position_acceptance(3), 0.0);
  EXPECT_DOUBLE_EQ(spec.position_acceptance(4), 0.0);
  EXPECT_DOUBLE_EQ(spec.position_acceptance(5), 0.0);  // beyond k
}

TEST(SpecAccept, RejectsBothWaysAtOnceAndOutOfRangeValues) {
  SpecAcceptanceConfig both;
  both.speculative_tokens = 3;
  both.acceptance_length = 2.0;
  both.acceptance_rate = 0.5;
  EXPECT_THROW(SpecAcceptance{both}, Error);

  EXPECT_THROW(with_length(3, 0.99), Error);
  EXPECT_THROW(with_length(3, 4.01), Error);
  EXPECT_THROW(with_length(0, 1.5), Error);
  EXPECT_THROW(with_length(3, std::nan("")), Error);
  EXPECT_THROW(with_rate(3, -0.1), Error);
  EXPECT_THROW(with_rate(3, 1.1), Error);
  EXPECT_THROW(with_rate(-1, 0.5), Error);

  SpecAcceptanceConfig neither;
  neither.speculative_tokens = 2;
  EXPECT_THROW(SpecAcceptance{neither}, Error);
}

}  // namespace
}  // namespace paceline
