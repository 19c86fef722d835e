#pragma once
// Which session a lane plays next (--sampler, --seed). sequential: 0, 1, ..., n-1, 0, ...;
// shuffle: a fresh random permutation for every pass over the sessions; random: uniform draws
// with replacement. Lanes beyond the number of sessions simply wrap around.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "bench/rng.h"

namespace paceline::bench {

enum class SamplerKind { kSequential, kShuffle, kRandom };

SamplerKind parse_sampler_kind(std::string_view name);  // "sequential" | "shuffle" | "random"
const char* sampler_kind_name(SamplerKind kind);

class SessionSampler {
 public:
  SessionSampler(size_t num_sessions, SamplerKind kind, uint64_t seed);

  size_t next();

 private:
  void reshuffle();

  size_t n_;
  SamplerKind kind_;
  SplitMix64 rng_;
  std::vector<size_t> order_;
  size_t pos_ = 0;
};

}  // namespace paceline::bench
