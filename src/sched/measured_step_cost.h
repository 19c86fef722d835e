#pragma once
// A step-time model fitted, step by step, to the times a real executor measured: the forward's
// time as c_tokens * tokens + c_attention * query-key pairs + c_logits * logit rows, each
// coefficient at least 0, by least squares over the recent steps that computed a prefill (older
// steps count less and less, so that the fit follows a host whose load changes). The same
// terms as SGLang's and ATOM's dynamic chunking (a chunk's time is linear in its tokens and in
// its attention area), and the features the simulator's cost models read (step_work.h).
//
// It trusts itself only near what it measured: before the first step it allows kProbeTokens,
// and then at most twice the most tokens any measured step computed, so that a long prefill
// grows its chunks as the fit learns (a slow start), instead of betting a minute-long first
// step on no data. Decode-only steps are not fitted: the bound never has to predict one.
#include <array>
#include <cstdint>

#include "sched/step_cost.h"

namespace paceline {

class MeasuredStepCost final : public StepCostModel {
 public:
  static constexpr int64_t kProbeTokens = 64;
  // Weight of the previous steps against the newest one: about the last 10 steps count.
  static constexpr double kForgetting = 0.9;

  int64_t predict_ns(const StepWork& work) const override;
  int64_t trusted_tokens() const override;
  void observe(const StepWork& work, int64_t step_ns) override;

  // ns per token, per query-key pair and per logit row: the current fit.
  std::array<double, 3> coefficients() const;
  int64_t steps_observed() const { return steps_; }

 private:
  void refit();

  // Exponentially weighted normal equations over scaled features.
  std::array<std::array<double, 3>, 3> xtx_{};
  std::array<double, 3> xty_{};
  std::array<double, 3> coef_{};  // per scaled feature
  int64_t steps_ = 0;
  int64_t max_tokens_ = 0;
};

}  // namespace paceline
