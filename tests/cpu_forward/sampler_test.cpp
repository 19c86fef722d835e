// Sampling: greedy, temperature, top-k, top-p, and randomness that is a pure function of
// (seed, position).
#include "exec/sampler.h"

#include <algorithm>
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

SamplingParams with_min_p(double temperature, double min_p, double top_p = 1.0) {
  SamplingParams p = params(temperature, -1, top_p);
  p.min_p = min_p;
  return p;
}

TEST(Sampler, MinPDropsTokensLessThanMinPTimesAsLikelyAsTheTop) {
  // Relative to the top 0.5: 0.6, 0.3, 0.1. min_p 0.5 keeps tokens 0 and 1, renormalized.
  std::vector<float> logits = {std::log(0.5f), std::log(0.3f), std::log(0.15f), std::log(0.05f)};
  std::vector<int> counts = histogram(logits, with_min_p(1.0, 0.5), 20000);
  EXPECT_EQ(counts[2] + counts[3], 0);
  EXPECT_LT(chi_square(counts, {0.625, 0.375, 0, 0}), 10.8);  // 1 degree of freedom, 99.9%
  // min_p 0.25 keeps token 2 too (0.3 >= 0.25), not token 3.
  counts = histogram(logits, with_min_p(1.0, 0.25), 20000);
  EXPECT_EQ(counts[3], 0);
  EXPECT_GT(counts[2], 0);
}

TEST(Sampler, MinPComesAfterTemperature) {
  // At temperature 2 the relative probabilities are the square roots: 0.77, 0.55, 0.32, so
  // min_p 0.5 keeps three tokens.
  std::vector<float> logits = {std::log(0.5f), std::log(0.3f), std::log(0.15f), std::log(0.05f)};
  std::vector<int> counts = histogram(logits, with_min_p(2.0, 0.5), 20000);
  EXPECT_EQ(counts[3], 0);
  EXPECT_GT(counts[2], 0);
}

TEST(Sampler, MinPComesBeforeTopP) {
  // min_p 0.5 leaves {0.625, 0.375}; top_p 0.6 of that keeps token 0 alone. (top_p first would
  // keep tokens 0 and 1 of the original 0.5, 0.3, and min_p would then drop neither.)
  std::vector<float> logits = {std::log(0.5f), std::log(0.3f), std::log(0.15f), std::log(0.05f)};
  std::vector<int> counts = histogram(logits, with_min_p(1.0, 0.5, 0.6), 500);
  EXPECT_EQ(counts[0], 500);
}

TEST(Sampler, MinPOneKeepsOnlyTheTopAndGreedyIgnoresMinP) {
  EXPECT_EQ(histogram(kLogits, with_min_p(1.0, 1.0), 300)[4], 300);
  EXPECT_EQ(sample_token(kLogits, with_min_p(0.0, 0.9), 1, 0), 4);
  // With top_k larger than what min_p leaves, min_p decides.
  SamplingParams p = with_min_p(1.0, 0.5);
  p.top_k = 5;
  std::vector<int> counts = histogram(kLogits, p, 2000);
  EXPECT_EQ(counts[0] + counts[1] + counts[2] + counts[3], 0);  // below exp(-0.5) of the top
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

// The sampler's definition, spelled the slow way: sort every candidate (weight descending, ties
// lower index first), keep the top k, keep the shortest head reaching top_p of the mass, walk the
// head's cumulative weight to the uniform number.
int32_t reference_sample(const std::vector<float>& logits, const SamplingParams& p, uint64_t seed,
                         int64_t position) {
  float max_logit = *std::max_element(logits.begin(), logits.end());
  std::vector<double> w(logits.size());
  for (size_t i = 0; i < w.size(); ++i)
    w[i] = std::exp((double{logits[i]} - max_logit) / p.temperature);
  std::vector<int32_t> order(w.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int32_t>(i);
  std::sort(order.begin(), order.end(),
            [&](int32_t a, int32_t b) { return w[a] > w[b] || (w[a] == w[b] && a < b); });
  size_t kept = p.top_k > 0 ? std::min(order.size(), static_cast<size_t>(p.top_k)) : order.size();
  double mass = 0;
  for (size_t r = 0; r < kept; ++r) mass += w[order[r]];
  if (p.top_p < 1.0) {
    double cumulative = 0;
    size_t r = 0;
    do {
      cumulative += w[order[r++]];
    } while (r < kept && cumulative < p.top_p * mass);
    kept = r;
    mass = cumulative;
  }
  double u = sample_uniform(seed, position) * mass, cumulative = 0;
  for (size_t r = 0; r < kept; ++r) {
    cumulative += w[order[r]];
    if (u < cumulative) return order[r];
  }
  return order[kept - 1];
}

TEST(Sampler, AgreesWithSortingEveryCandidate) {
  // Peaked and flat rows, large and small vocabularies, ties, every combination of top-k and
  // top-p: the selection-based sampler draws what a full sort would (summation order aside, which
  // could only matter within rounding of a boundary).
  std::mt19937 rng(11);
  int draws = 0;
  for (size_t vocab : {1u, 2u, 7u, 33u, 100u, 1000u, 151936u}) {
    for (double spread : {0.0, 0.01, 1.0, 8.0}) {
      std::normal_distribution<float> normal(0.0f, static_cast<float>(spread));
      std::vector<float> logits(vocab);
      for (float& l : logits) l = spread == 0.0 ? 0.0f : normal(rng);
      if (vocab > 10) logits[vocab / 3] = logits[vocab / 2];  // a tie
      for (int64_t top_k : {-1, 1, 5, 64}) {
        for (double top_p : {1.0, 0.95, 0.5, 0.05}) {
          const SamplingParams p = params(0.8, top_k, top_p);
          const int positions = vocab > 1000 ? 3 : 20;
          for (int pos = 0; pos < positions; ++pos, ++draws) {
            ASSERT_EQ(sample_token(logits, p, 5, pos), reference_sample(logits, p, 5, pos))
                << "vocab " << vocab << " spread " << spread << " top_k " << top_k << " top_p "
                << top_p << " position " << pos;
          }
        }
      }
    }
  }
  EXPECT_GT(draws, 5000);
}

}  // namespace
}  // namespace paceline
