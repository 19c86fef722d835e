#include "bench/token_prompt.h"

#include <algorithm>

#include "base/error.h"
#include "bench/rng.h"

namespace paceline::bench {

std::vector<int32_t> synthesize_prompt_tokens(const RequestSpec& spec,
                                              const TokenPromptConfig& config) {
  if (config.vocab_end <= config.vocab_begin) {
    fail("token vocabulary [{}, {}) is empty", config.vocab_begin, config.vocab_end);
  }
  if (spec.block_size <= 0) {
    fail("request {}: block size {} is not positive", spec.id, spec.block_size);
  }
  auto range = static_cast<uint64_t>(config.vocab_end - config.vocab_begin);
  auto token = [&](uint64_t key, int64_t j) {
    return config.vocab_begin +
           static_cast<int32_t>(mix_keys(key, static_cast<uint64_t>(j)) % range);
  };
  uint64_t play_key =
      mix_keys(mix_keys(config.seed, hash_string(spec.hash_scope)), hash_string(spec.marker));
  std::vector<int32_t> tokens;
  tokens.reserve(static_cast<size_t>(spec.isl));
  for (int64_t id : spec.hash_ids) {
    uint64_t block_key = mix_keys(play_key, static_cast<uint64_t>(id));
    for (int64_t j = 0; j < spec.block_size && static_cast<int64_t>(tokens.size()) < spec.isl;
         ++j) {
      tokens.push_back(token(block_key, j));
    }
  }
  // The tail belongs to this request only: key it by where the request sits in its play.
  uint64_t tail_key =
      mix_keys(mix_keys(mix_keys(play_key, 0x7a11ULL), static_cast<uint64_t>(spec.stream)),
               static_cast<uint64_t>(static_cast<int64_t>(spec.turn)));
  for (int64_t j = 0; static_cast<int64_t>(tokens.size()) < spec.isl; ++j) {
    tokens.push_back(token(tail_key, j));
  }
  return tokens;
}

}  // namespace paceline::bench
