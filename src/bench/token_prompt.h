#pragma once
// Prompt synthesis on the token-id path (`--endpoint completions`): a RequestSpec becomes exactly
// `isl` token ids, with no tokenizer on the client. Block i of the prompt is a pure function of
// (seed, hash_scope, marker, hash_ids[i], position in the block), so requests that shared a block
// in the recording share identical tokens here, and hit the server's prefix cache where the
// original did; a different marker (another play, another run) changes every block. Tokens past
// the last recorded block are unique to the request.
#include <cstdint>
#include <vector>

#include "bench/transport.h"

namespace paceline::bench {

struct TokenPromptConfig {
  uint64_t seed = 0;
  // Ids are drawn from [vocab_begin, vocab_end): keep clear of special tokens.
  int32_t vocab_begin = 1000;
  int32_t vocab_end = 30000;
};

std::vector<int32_t> synthesize_prompt_tokens(const RequestSpec& spec,
                                              const TokenPromptConfig& config);

}  // namespace paceline::bench
