#pragma once
// The Pareto frontier of a sweep, with an explicit direction per axis (spec: "Sweeps, Pareto,
// comparisons"). A point is on the frontier when no other point is at least as good on both axes
// and strictly better on one. Directions are named per axis, never by a corner of the chart.
#include <cstddef>
#include <span>
#include <string>
#include <vector>

namespace paceline::bench {

enum class Direction { kMaximize, kMinimize };

const char* direction_name(Direction d);  // "maximize" or "minimize"
const char* direction_hint(Direction d);  // "higher is better" or "lower is better"

struct ParetoAxis {
  std::string label;  // what the chart's axis says, with its unit
  Direction direction = Direction::kMaximize;
};

struct ParetoPoint {
  double x = 0;
  double y = 0;
};

// Whether `a` dominates `b`: at least as good on both axes and strictly better on one. A point
// with a non-finite coordinate neither dominates nor can be compared.
bool dominates(const ParetoPoint& a, const ParetoPoint& b, Direction x, Direction y);

// Indices of the frontier points, ordered by x ascending (then y ascending). Equal points do not
// dominate each other, so duplicates on the frontier are all kept. Points with a non-finite
// coordinate are never on it. Quadratic: a sweep has tens of points, not thousands.
std::vector<size_t> pareto_frontier(std::span<const ParetoPoint> points, Direction x, Direction y);

}  // namespace paceline::bench
