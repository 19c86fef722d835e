#include "bench/pareto.h"

#include <algorithm>
#include <cmath>

namespace paceline::bench {

namespace {

bool finite(const ParetoPoint& p) {
  return std::isfinite(p.x) && std::isfinite(p.y);
}

// Compares on one axis: >0 when `a` is better than `b`, 0 when equal, <0 when worse.
int better(double a, double b, Direction d) {
  if (a == b) return 0;
  bool higher = a > b;
  return (higher == (d == Direction::kMaximize)) ? 1 : -1;
}

}  // namespace

const char* direction_name(Direction d) {
  return d == Direction::kMaximize ? "maximize" : "minimize";
}

const char* direction_hint(Direction d) {
  return d == Direction::kMaximize ? "higher is better" : "lower is better";
}

bool dominates(const ParetoPoint& a, const ParetoPoint& b, Direction x, Direction y) {
  if (!finite(a) || !finite(b)) return false;
  int bx = better(a.x, b.x, x);
  int by = better(a.y, b.y, y);
  return bx >= 0 && by >= 0 && (bx > 0 || by > 0);
}

std::vector<size_t> pareto_frontier(std::span<const ParetoPoint> points, Direction x, Direction y) {
  std::vector<size_t> frontier;
  for (size_t i = 0; i < points.size(); ++i) {
    if (!finite(points[i])) continue;
    bool dominated = std::any_of(points.begin(), points.end(), [&](const ParetoPoint& other) {
      return dominates(other, points[i], x, y);
    });
    if (!dominated) frontier.push_back(i);
  }
  std::stable_sort(frontier.begin(), frontier.end(), [&](size_t a, size_t b) {
    if (points[a].x != points[b].x) return points[a].x < points[b].x;
    return points[a].y < points[b].y;
  });
  return frontier;
}

}  // namespace paceline::bench
