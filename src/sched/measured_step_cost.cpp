#include "sched/measured_step_cost.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace paceline {
namespace {

// Features scaled to similar magnitudes (a step computes thousands of tokens and millions of
// query-key pairs), so that the normal equations stay well conditioned.
constexpr std::array<double, 3> kScale = {1e3, 1e6, 1.0};

std::array<double, 3> features(const StepWork& w) {
  return {static_cast<double>(w.tokens) / kScale[0], static_cast<double>(w.attention) / kScale[1],
          static_cast<double>(w.logit_rows) / kScale[2]};
}

// Solves a x = b for the features in `mask` (a 3 x 3 system restricted to them) by Gaussian
// elimination; false when the restricted system is singular.
bool solve(std::array<std::array<double, 3>, 3> a, std::array<double, 3> b, unsigned mask,
           std::array<double, 3>& x) {
  std::array<int, 3> idx{};
  int n = 0;
  for (int i = 0; i < 3; ++i) {
    if (mask & (1u << i)) idx[n++] = i;
  }
  double m[3][4] = {};
  for (int r = 0; r < n; ++r) {
    for (int c = 0; c < n; ++c) m[r][c] = a[idx[r]][idx[c]];
    m[r][n] = b[idx[r]];
  }
  for (int c = 0; c < n; ++c) {
    int pivot = c;
    for (int r = c + 1; r < n; ++r) {
      if (std::abs(m[r][c]) > std::abs(m[pivot][c])) pivot = r;
    }
    if (std::abs(m[pivot][c]) < 1e-12) return false;
    std::swap(m[c], m[pivot]);
    for (int r = 0; r < n; ++r) {
      if (r == c) continue;
      const double f = m[r][c] / m[c][c];
      for (int k = c; k <= n; ++k) m[r][k] -= f * m[c][k];
    }
  }
  x = {};
  for (int r = 0; r < n; ++r) x[idx[r]] = m[r][n] / m[r][r];
  return true;
}

}  // namespace

int64_t MeasuredStepCost::predict_ns(const StepWork& work) const {
  const std::array<double, 3> f = features(work);
  double t = 0;
  for (int i = 0; i < 3; ++i) t += coef_[i] * f[i];
  return static_cast<int64_t>(std::ceil(t));
}

int64_t MeasuredStepCost::trusted_tokens() const {
  return std::max(kProbeTokens, 2 * max_tokens_);
}

void MeasuredStepCost::observe(const StepWork& work, int64_t step_ns) {
  if (work.kind == ForwardKind::kDecode || work.tokens <= 0 || step_ns < 0) return;
  const std::array<double, 3> f = features(work);
  const auto y = static_cast<double>(step_ns);
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) xtx_[i][j] = kForgetting * xtx_[i][j] + f[i] * f[j];
    xty_[i] = kForgetting * xty_[i] + f[i] * y;
  }
  ++steps_;
  max_tokens_ = std::max(max_tokens_, work.tokens);
  refit();
}

// Non-negative least squares on three features, exactly: the optimum is the unconstrained
// solution on some subset of them, so every subset whose solution is non-negative is a
// candidate and the one with the least squared error wins (its error is -b.x up to a constant).
void MeasuredStepCost::refit() {
  auto a = xtx_;
  // A little ridge keeps a subset solvable while its features are collinear (a long prefill in
  // chunks of one size: tokens and logit rows do not vary).
  const double ridge = 1e-9 * (a[0][0] + a[1][1] + a[2][2]) + 1e-30;
  for (int i = 0; i < 3; ++i) a[i][i] += ridge;
  std::array<double, 3> best{};
  double best_err = 0;  // the empty subset: all coefficients 0
  for (unsigned mask = 1; mask < 8; ++mask) {
    std::array<double, 3> x{};
    if (!solve(a, xty_, mask, x)) continue;
    if (std::any_of(x.begin(), x.end(), [](double v) { return v < 0; })) continue;
    double err = 0;
    for (int i = 0; i < 3; ++i) err -= xty_[i] * x[i];
    if (err < best_err) {
      best_err = err;
      best = x;
    }
  }
  coef_ = best;
}

std::array<double, 3> MeasuredStepCost::coefficients() const {
  return {coef_[0] / kScale[0], coef_[1] / kScale[1], coef_[2] / kScale[2]};
}

}  // namespace paceline
