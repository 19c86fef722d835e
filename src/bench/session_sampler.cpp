#include "bench/session_sampler.h"

#include <numeric>
#include <utility>

#include "base/error.h"

namespace paceline::bench {

SamplerKind parse_sampler_kind(std::string_view name) {
  if (name == "sequential") return SamplerKind::kSequential;
  if (name == "shuffle") return SamplerKind::kShuffle;
  if (name == "random") return SamplerKind::kRandom;
  fail("--sampler: '{}' is not one of sequential, shuffle, random", name);
}

const char* sampler_kind_name(SamplerKind kind) {
  switch (kind) {
    case SamplerKind::kSequential:
      return "sequential";
    case SamplerKind::kShuffle:
      return "shuffle";
    case SamplerKind::kRandom:
      return "random";
  }
  return "?";
}

SessionSampler::SessionSampler(size_t num_sessions, SamplerKind kind, uint64_t seed)
    : n_(num_sessions), kind_(kind), rng_(mix_keys(seed, 0x5e55)), order_(num_sessions) {
  if (n_ == 0) fail("no sessions to replay");
  std::iota(order_.begin(), order_.end(), size_t{0});
  if (kind_ == SamplerKind::kShuffle) reshuffle();
}

void SessionSampler::reshuffle() {
  // Fisher-Yates with our own generator, so a seed gives the same order everywhere.
  for (size_t i = n_ - 1; i > 0; --i) std::swap(order_[i], order_[rng_.below(i + 1)]);
}

size_t SessionSampler::next() {
  if (kind_ == SamplerKind::kRandom) return rng_.below(n_);
  if (pos_ == n_) {
    pos_ = 0;
    if (kind_ == SamplerKind::kShuffle) reshuffle();
  }
  return order_[pos_++];
}

}  // namespace paceline::bench
