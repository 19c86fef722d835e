#pragma once
// Synthetic speculative acceptance, as ATOM and InferenceX benchmark it: each decode forward
// verifies k draft tokens per sequence plus the bonus token, and how many are committed is drawn
// so that the mean is a configured acceptance length AL. Draft position i (0-based) is accepted
// with probability 1 for i < floor(AL - 1), frac(AL - 1) for the next one, 0 after; so a step
// commits floor(AL) or floor(AL) + 1 tokens. Pure and deterministic: the draw is a hash of
// (step seed, request id).
#include <cstdint>
#include <optional>

namespace paceline {

struct SpecAcceptanceConfig {
  int32_t speculative_tokens = 0;           // --speculative-tokens k (>= 0)
  std::optional<double> acceptance_length;  // --spec-decode-acceptance-length AL, 1 <= AL <= k+1
  std::optional<double> acceptance_rate;  // --spec-decode-acceptance-rate r in [0, 1]: AL = 1 + k*r
};

class SpecAcceptance {
 public:
  // Validates: k >= 0; AL and r mutually exclusive; each in range; with k > 0 one of them is
  // required. Throws paceline::Error naming the flag.
  explicit SpecAcceptance(const SpecAcceptanceConfig& config);

  int32_t speculative_tokens() const { return k_; }
  // Tokens each decode forward computes per sequence (charged to the token budget): k + 1.
  int32_t tokens_per_forward() const { return k_ + 1; }
  // The effective acceptance length: mean tokens committed per sequence per step.
  double acceptance_length() const { return acceptance_length_; }
  // Probability that draft position `position` (0-based) is accepted, given all before it were.
  double position_acceptance(int32_t position) const;
  // Tokens committed this step for one sequence, bonus token included: in
  // [floor(AL), floor(AL) + 1] and never above k + 1.
  int32_t accepted_tokens(uint64_t step_seed, uint64_t request_id) const;

 private:
  int32_t k_ = 0;
  double acceptance_length_ = 1.0;
  int32_t sure_drafts_ = 0;   // floor(AL - 1): always accepted
  double last_fraction_ = 0;  // frac(AL - 1): chance of one more
};

// Seed of one scheduler step, from the run's seed and the step counter: different steps draw
// independently, the same (seed, step) always draws the same.
uint64_t spec_step_seed(uint64_t run_seed, uint64_t step_index);

}  // namespace paceline
