#pragma once
// Prompt synthesis on the text path (`--endpoint chat`): a RequestSpec becomes the text of its one
// user message. The text is the play's cache-bust marker, then one filler word per prompt token:
// " the", " water", ... each a single token in byte-level BPE vocabularies (tests check the Qwen3
// tokenizer), so that the words re-tokenize to exactly one token each wherever they sit.
//
// Block i of the prompt (block_size words) is a pure function of (seed, hash_scope, hash_ids[i]):
// requests that shared a block in the recording send identical text here, after the same marker,
// and so hit the server's prefix cache where the original did. Words past the last recorded block
// belong to the request alone. The whole conversation so far is this one message: consecutive
// turns share their leading blocks, which is all a prefix cache can see.
//
// A prompt with no recorded block (a lane's one-token warmups) shares nothing with its play, as
// on the token path: its words come first and the marker after them. With the marker first, its
// chat template and marker filled the play's first KV block, so every warmup hit that block just
// after the one before had freed it, and the reuse policy's idle rule took those gaps of a few
// milliseconds for how long sessions take to come back (docs/kv-tiers.md).
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "bench/transport.h"

namespace paceline::bench {

struct TextPromptConfig {
  uint64_t seed = 0;
  // Tokens that the marker and the chat template add around the words. They are taken off the
  // request's private tail (never off a shared block), so that the server counts about `isl`.
  int64_t overhead_tokens = 0;
};

// About what a Qwen3 or Llama-3 chat template plus "[rid:<12 hex>]\n\n" cost, in tokens.
inline constexpr int64_t kDefaultChatOverheadTokens = 22;

// The user message for `spec`: the marker followed by the filler words (the words followed by
// the marker when the prompt has no recorded block).
std::string synthesize_prompt_text(const RequestSpec& spec, const TextPromptConfig& config);
// Whether the marker leads the prompt: it does unless the prompt has no recorded block.
bool marker_leads(const RequestSpec& spec);
// The words alone, appended to `out` (they need no JSON escaping).
void append_prompt_words(std::string& out, const RequestSpec& spec, const TextPromptConfig& config);

// The filler vocabulary, each word without its leading space.
std::span<const std::string_view> filler_words();

}  // namespace paceline::bench
