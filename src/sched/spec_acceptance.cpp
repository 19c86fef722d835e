#include "sched/spec_acceptance.h"

#include <cmath>

#include "base/error.h"

namespace paceline {

namespace {

// SplitMix64's finalizer: a bijective mix, so distinct inputs never collide.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Uniform in [0, 1) from the top 53 bits.
double unit_interval(uint64_t bits) {
  return static_cast<double>(bits >> 11) * 0x1.0p-53;
}

}  // namespace

uint64_t spec_step_seed(uint64_t run_seed, uint64_t step_index) {
  return mix(mix(run_seed) ^ step_index);
}

SpecAcceptance::SpecAcceptance(const SpecAcceptanceConfig& config) : k_(config.speculative_tokens) {
  if (k_ < 0) fail("--speculative-tokens must be >= 0, got {}", k_);
  const auto& al = config.acceptance_length;
  const auto& rate = config.acceptance_rate;
  if (al && rate) {
    fail(
        "--spec-decode-acceptance-length and --spec-decode-acceptance-rate are mutually "
        "exclusive: give one");
  }
  if (al) {
    if (!std::isfinite(*al) || *al < 1.0 || *al > k_ + 1.0) {
      fail("--spec-decode-acceptance-length must be in [1, {}] (k + 1 with k = {}), got {}", k_ + 1,
           k_, *al);
    }
    acceptance_length_ = *al;
  } else if (rate) {
    if (!std::isfinite(*rate) || *rate < 0.0 || *rate > 1.0) {
      fail("--spec-decode-acceptance-rate must be in [0, 1], got {}", *rate);
    }
    acceptance_length_ = 1.0 + k_ * *rate;
  } else if (k_ > 0) {
    fail(
        "--speculative-tokens {} needs --spec-decode-acceptance-length or "
        "--spec-decode-acceptance-rate",
        k_);
  }
  // 1 + k*r can land a rounding error below an integer (1 + 3*0.7 ...): snap so that an
  // integral AL always commits exactly AL tokens.
  const double nearest = std::round(acceptance_length_);
  if (std::abs(acceptance_length_ - nearest) < 1e-9) acceptance_length_ = nearest;
  const double drafts = acceptance_length_ - 1.0;
  sure_drafts_ = static_cast<int32_t>(std::floor(drafts));
  last_fraction_ = drafts - sure_drafts_;
}

double SpecAcceptance::position_acceptance(int32_t position) const {
  if (position < 0 || position >= k_) return 0.0;
  if (position < sure_drafts_) return 1.0;
  return position == sure_drafts_ ? last_fraction_ : 0.0;
}

int32_t SpecAcceptance::accepted_tokens(uint64_t step_seed, uint64_t request_id) const {
  int32_t committed = 1 + sure_drafts_;  // the bonus token plus every sure draft
  if (last_fraction_ > 0.0 && unit_interval(mix(step_seed ^ mix(request_id))) < last_fraction_) {
    ++committed;
  }
  return committed;
}

}  // namespace paceline
