// Sampling: greedy, temperature, top-k, top-p, and randomness that is a pure function of
// (seed, position).
#include "exec/sampler.h"

#include <cmath>
#include <map>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "base/error.h"

namespace paceline {
namespace {

SamplingParams params(double temperature, int64_t top_k = -1, double top_p = 1.0) {
  SamplingParams p;
  p.temperature = temperature;
  p.top_k = top_k;
  p.top_p = top_p;
  return p;
}

// Counts of each token over `draws` consecutive positions of one seed.
std::vector<int> histogram(const std::vector<float>& logits, const SamplingParams& p, int draws,
                           uint64_t seed = 42) {
  std::vector<int> counts(logits.size(), 0);
  for (int pos = 0; pos < draws; ++pos) ++counts[sample_token(logits, p, seed, pos)];
  return counts;
}

// Pearson's statistic of observed counts against expected probabilities.
double chi_square(const std::vector<int>& counts, const std::vector<double>& probs) {
  double n = 0;
  for (int c : counts) n += c;
  double stat = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    if (probs[i] == 0) continue;
    double e = n * probs[i];
    stat += (counts[i] - e) * (counts[i] - e) / e;
  }
  return stat;
}

std::vector<double> softmax(const std::vector<float>& logits, double temperature) {
  std::vector<double> p(logits.size());
  double sum = 0;
  for (size_t i = 0; i < logits.size(); ++i) sum += p[i] = std::exp(logits[i] / temperature);
  for (double& v : p) v /= sum;
  return p;
}

const std::vector<float> kLogits = {1.0f, 0.5f, 0.0f, -0.5f, 2.0f, 1.5f};

TEST(Sampler, GreedyIsArgmaxWithTheLowestIndexOnTies) {
  EXPECT_EQ(sample_token(kLogits, params(0.0), 1, 0), 4);
  std::vector<float> tied = {0.0f, 3.0f, -1.0f, 3.0f};
  EXPECT_EQ(sample_token(tied, params(0.0), 1, 0), 1);
  EXPECT_EQ(sample_greedy(tied), 1);
  EXPECT_THROW(sample_greedy({}), Error);
}

TEST(Sampler, TopKOneIsGreedyAtAnyTemperature) {
  for (int pos = 0; pos < 100; ++pos) {
    EXPECT_EQ(sample_token(kLogits, params(1.5, 1), 9, pos), 4);
  }
}

TEST(Sampler, SameSeedAndPositionGiveTheSameToken) {
  std::vector<int32_t> first, again, other_seed;
  for (int pos = 0; pos < 200; ++pos) {
    first.push_back(sample_token(kLogits, params(1.0), 123, pos));
    again.push_back(sample_token(kLogits, params(1.0), 123, pos));
    other_seed.push_back(sample_token(kLogits, params(1.0), 124, pos));
  }
  EXPECT_EQ(first, again);
  EXPECT_NE(first, other_seed);
}

TEST(Sampler, UniformNumbersAreInTheUnitIntervalAndVaryWithPosition) {
  double sum = 0;
  for (int pos = 0; pos < 10000; ++pos) {
    double u = sample_uniform(5, pos);
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    sum += u;
  }
  EXPECT_NEAR(sum / 10000, 0.5, 0.01);
  EXPECT_NE(sample_uniform(5, 0), sample_uniform(5, 1));
  EXPECT_NE(sample_uniform(5, 0), sample_uniform(6, 0));
}

// Chi-square with 5 degrees of freedom: 20.5 is its 99.9% quantile. Seeds are fixed, so the
// test is deterministic; the bound only says the fixed draws look like the distribution.
TEST(Sampler, DrawsFollowTheSoftmaxOfTheLogits) {
  std::vector<int> counts = histogram(kLogits, params(1.0), 30000);
  EXPECT_LT(chi_square(counts, softmax(kLogits, 1.0)), 20.5);
}

TEST(Sampler, TemperatureSharpensOrFlattensTheDistribution) {
  for (double t : {0.5, 2.0}) {
    std::vector<int> counts = histogram(kLogits, params(t), 30000, 7);
    EXPECT_LT(chi_square(counts, softmax(kLogits, t)), 20.5) << "temperature " << t;
  }
}

TEST(Sampler, TinyTemperatureApproachesGreedy) {
  std::vector<int> counts = histogram(kLogits, params(0.01), 2000);
  EXPECT_EQ(counts[4], 2000);
}

TEST(Sampler, TopKDrawsOnlyTheKMostLikelyRenormalized) {
  // Top 3 of kLogits: tokens 4 (2.0), 5 (1.5), 0 (1.0).
  std::vector<int> counts = histogram(kLogits, params(1.0, 3), 30000);
  std::vector<double> p = softmax({1.0f, -INFINITY, -INFINITY, -INFINITY, 2.0f, 1.5f}, 1.0);
  EXPECT_EQ(counts[1] + counts[2] + counts[3], 0);
  EXPECT_LT(chi_square(counts, p), 13.8);  // 2 degrees of freedom, 99.9%
}

TEST(Sampler, TopPKeepsTheSmallestHeadReachingP) {
  // Probabilities 0.5, 0.3, 0.15, 0.05: top_p 0.75 keeps the first two (0.5 < 0.75 <= 0.8).
  std::vector<float> logits = {std::log(0.5f), std::log(0.3f), std::log(0.15f), std::log(0.05f)};
  std::vector<int> counts = histogram(logits, params(1.0, -1, 0.75), 20000);
  EXPECT_EQ(counts[2] + counts[3], 0);
  EXPECT_LT(chi_square(counts, {0.625, 0.375, 0, 0}), 10.8);  // 1 degree of freedom, 99.9%

  // A p below the largest probability still keeps one token.
  std::vector<int> one = histogram(logits, params(1.0, -1, 0.01), 500);
  EXPECT_EQ(one[0], 500);
}

TEST(Sampler, TopKThenTopPOnTheRenormalizedHead) {
  // Top-2 of {0.5, 0.3, 0.15, 0.05} renormalizes to {0.625, 0.375}; p 0.6 keeps token 0 only.
  std::vector<float> logits = {std::log(0.5f), std::log(0.3f), std::log(0.15f), std::log(0.05f)};
  std::vector<int> counts = histogram(logits, params(1.0, 2, 0.6), 500);
  EXPECT_EQ(counts[0], 500);
}

TEST(Sampler, LargeVocabularyNucleusStaysInTheHead) {
  // 150k tokens, a few likely ones: top_p 0.9 must never reach the flat tail.
  std::vector<float> logits(151936, 0.0f);
  for (int i = 0; i < 5; ++i) logits[1000 * i + 7] = 20.0f - static_cast<float>(i);
  for (int pos = 0; pos < 200; ++pos) {
    int32_t t = sample_token(logits, params(1.0, -1, 0.9), 3, pos);
    EXPECT_EQ(t % 1000, 7) << t;
  }
}

}  // namespace
}  // namespace paceline
