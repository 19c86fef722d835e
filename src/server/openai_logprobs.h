#pragma once
// The `logprobs` objects of OpenAI responses, from the engine's RowLogprobs. A token is named by
// its bytes as the tokenizer holds them: "token" is that text (invalid UTF-8 shown as U+FFFD),
// "bytes" the raw bytes, so that a client can join the pieces of a character split across
// tokens. Logprobs below -9999 (and -inf) are written as -9999.0, as vLLM does, since JSON has no
// infinity.
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "sched/logprob.h"

namespace paceline {

// A token's bytes; empty for an id the tokenizer has no text for.
using TokenBytes = std::function<std::string(int32_t token)>;

// Chat: {"content":[{"token","logprob","bytes":[...],"top_logprobs":[{"token","logprob",
// "bytes"},...]},...]}, one entry per row.
std::string chat_logprobs_json(std::span<const RowLogprobs> rows, const TokenBytes& bytes);

// One token of a legacy completion's text; no logprobs for the prompt's first token (echo).
struct CompletionToken {
  int32_t token = 0;
  std::optional<RowLogprobs> logprobs;
};

// Legacy completions: {"text_offset":[...],"token_logprobs":[...],"tokens":[...],
// "top_logprobs":[{token: logprob, ...} | null, ...]}. Each top_logprobs object holds the chosen
// token first, then the k highest (so up to k + 1 entries, as OpenAI documents). text_offset
// counts characters (code points) of the choice's text from `first_offset`.
std::string completion_logprobs_json(std::span<const CompletionToken> tokens,
                                     const TokenBytes& bytes, int64_t first_offset = 0);

// The characters (code points) the tokens' texts add to the choice's text: the next chunk's
// first_offset in a stream.
int64_t completion_text_length(std::span<const CompletionToken> tokens, const TokenBytes& bytes);

}  // namespace paceline
