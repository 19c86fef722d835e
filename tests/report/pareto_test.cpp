// The Pareto frontier of the spec: no other point at least as good on both axes and strictly
// better on one; directions per axis; ties and missing values.
#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "bench/pareto.h"

namespace paceline::bench {
namespace {

constexpr Direction kMax = Direction::kMaximize;
constexpr Direction kMin = Direction::kMinimize;

TEST(Pareto, DominatedPointsAreExcluded) {
  std::vector<ParetoPoint> p = {
      {30, 50},   // 0: frontier (best x)
      {15, 70},   // 1: dominated by 2
      {20, 80},   // 2: frontier
      {10, 100},  // 3: frontier (best y)
      {5, 100},   // 4: dominated by 3 (equal y, worse x)
      {25, 40},   // 5: dominated by 0
  };
  EXPECT_EQ(pareto_frontier(p, kMax, kMax), (std::vector<size_t>{3, 2, 0}));  // by x ascending
}

TEST(Pareto, EqualOnOneAxisWorseOnTheOtherIsDominated) {
  std::vector<ParetoPoint> p = {{10, 100}, {10, 90}};
  EXPECT_TRUE(dominates(p[0], p[1], kMax, kMax));
  EXPECT_FALSE(dominates(p[1], p[0], kMax, kMax));
  EXPECT_EQ(pareto_frontier(p, kMax, kMax), (std::vector<size_t>{0}));
}

TEST(Pareto, IdenticalPointsDoNotDominateEachOther) {
  std::vector<ParetoPoint> p = {{10, 100}, {20, 50}, {10, 100}};
  EXPECT_FALSE(dominates(p[0], p[2], kMax, kMax));
  EXPECT_EQ(pareto_frontier(p, kMax, kMax), (std::vector<size_t>{0, 2, 1}));
}

TEST(Pareto, EachAxisHasItsOwnDirection) {
  std::vector<ParetoPoint> p = {{1, 1}, {2, 2}, {3, 3}};
  EXPECT_EQ(pareto_frontier(p, kMax, kMax), (std::vector<size_t>{2}));
  EXPECT_EQ(pareto_frontier(p, kMin, kMin), (std::vector<size_t>{0}));
  // Minimizing x while maximizing y: each point trades one axis for the other.
  EXPECT_EQ(pareto_frontier(p, kMin, kMax), (std::vector<size_t>{0, 1, 2}));
  EXPECT_EQ(pareto_frontier(p, kMax, kMin), (std::vector<size_t>{0, 1, 2}));
}

TEST(Pareto, LatencyAgainstThroughput) {
  // x = TTFT p90 in ms (minimize), y = tok/s per GPU (maximize).
  std::vector<ParetoPoint> p = {{100, 500}, {200, 900}, {250, 850}, {400, 1200}, {150, 400}};
  EXPECT_EQ(pareto_frontier(p, kMin, kMax), (std::vector<size_t>{0, 1, 3}));
}

TEST(Pareto, NonFinitePointsAreNeverOnTheFrontierNorDominate) {
  double nan = std::numeric_limits<double>::quiet_NaN();
  double inf = std::numeric_limits<double>::infinity();
  std::vector<ParetoPoint> p = {{nan, 1000}, {10, 10}, {inf, inf}};
  EXPECT_FALSE(dominates(p[2], p[1], kMax, kMax));
  EXPECT_EQ(pareto_frontier(p, kMax, kMax), (std::vector<size_t>{1}));
  EXPECT_TRUE(pareto_frontier(std::vector<ParetoPoint>{}, kMax, kMax).empty());
}

TEST(Pareto, DirectionsAreNamedNotCornered) {
  EXPECT_STREQ(direction_name(kMax), "maximize");
  EXPECT_STREQ(direction_name(kMin), "minimize");
  EXPECT_STREQ(direction_hint(kMax), "higher is better");
  EXPECT_STREQ(direction_hint(kMin), "lower is better");
}

}  // namespace
}  // namespace paceline::bench
