#pragma once
// Parsing and validation of OpenAI request bodies (/v1/chat/completions, /v1/completions) into
// plain structs. Every problem throws ApiException (status 400 unless said otherwise) naming the
// field in `param`; unknown fields are ignored, as OpenAI-compatible servers do. No tokenizer, no
// engine: the caller renders and tokenizes, then calls resolve_max_tokens and to_request_params.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "sched/request.h"
#include "sched/sampling_params.h"

namespace paceline {

inline constexpr size_t kMaxStopStrings = 16;
inline constexpr int64_t kMaxTokensLimit = 1'000'000'000;
inline constexpr int64_t kMaxChoices = 128;           // n
inline constexpr int32_t kMaxCompletionLogprobs = 5;  // legacy completions' logprobs, as OpenAI

// The sampling, length and stop fields both endpoints share.
struct GenerationOptions {
  std::optional<int64_t> max_tokens;  // max_completion_tokens, else max_tokens; unset: fill
  int64_t min_tokens = 0;             // min_tokens (alias min_new_tokens)
  bool ignore_eos = false;
  // temperature [0, 2], top_p (0, 1], top_k -1 or >= 1, seed; min_p [0, 1], presence_penalty and
  // frequency_penalty [-2, 2], repetition_penalty [1e-6, 1e6], logit_bias (ids checked by check_logit_bias)
  SamplingParams sampling;
  std::vector<std::string> stop;        // up to kMaxStopStrings non-empty strings
  std::vector<int32_t> stop_token_ids;  // each >= 0
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  int64_t n = 1;               // choices, [1, kMaxChoices]
  // -1: no logprobs; k >= 0: each token's logprob and its k most likely alternatives (chat:
  // logprobs true and top_logprobs k in [0, 20]; completions: logprobs k in [0, 5]).
  int32_t logprobs = -1;
  // stream_options.continuous_usage_stats: usage on every chunk (with include_usage, as vLLM).
  bool continuous_usage_stats = false;
};

struct ToolChoice {
  enum class Mode { kNone, kAuto, kRequired, kFunction };
  // Default: kAuto when tools are given, else kNone. kRequired and kFunction are accepted but
  // not enforced (no guided decoding): the model is only prompted with the tools.
  Mode mode = Mode::kNone;
  std::string function_name;  // kFunction only; checked to name one of `tools`
};

struct ChatCompletionRequest {
  std::string model;  // empty when absent (the server's model is meant)
  // Validated messages for the chat template: objects with a known role; a content given as an
  // array of {"type":"text","text":...} parts is replaced by the parts' texts joined with "".
  nlohmann::ordered_json messages;
  nlohmann::ordered_json tools;  // null when absent or empty, else an array of tool objects
  ToolChoice tool_choice;
  std::optional<bool> enable_thinking;  // chat_template_kwargs.enable_thinking
  // false: at most one tool call in the answer (the first the model wrote; the others dropped).
  bool parallel_tool_calls = true;
  GenerationOptions options;

  // Whether the output is to be scanned for <tool_call> blocks.
  bool parses_tool_calls() const {
    return !tools.is_null() && tool_choice.mode != ToolChoice::Mode::kNone;
  }
};

struct CompletionRequest {
  std::string model;
  // Exactly one of the two: text (a string, or an array of one string) or token ids (an array
  // of ints, or an array of one such array; each id in [0, 2^31)).
  std::optional<std::string> prompt_text;
  std::vector<int32_t> prompt_token_ids;
  GenerationOptions options;
  bool echo = false;  // the prompt comes first in each choice's text (and logprobs)

  bool has_token_prompt() const { return !prompt_text.has_value(); }
};

// Accepts "application/json" with any parameters ("; charset=utf-8"), case-insensitively, and a
// missing (empty) header, which vLLM also reads as JSON. Anything else throws
// unsupported_media_type_error.
void check_content_type(std::string_view content_type);

// Parses a body that must be one JSON object, in time linear in its size (request_json.h).
// Malformed JSON → 400 naming the byte position (1-based); invalid UTF-8 in a string → 400
// saying so; nesting deeper than 128 levels → 400; another JSON type → 400.
nlohmann::ordered_json parse_json_object(std::string_view body);

// check_content_type + parse_json_object + the field checks.
ChatCompletionRequest parse_chat_completion_request(std::string_view body,
                                                    std::string_view content_type);
ChatCompletionRequest parse_chat_completion_request(const nlohmann::ordered_json& body);
CompletionRequest parse_completion_request(std::string_view body, std::string_view content_type);
CompletionRequest parse_completion_request(const nlohmann::ordered_json& body);

// Throws 400 (code "context_length_exceeded", param `input_name`) unless
// prompt_tokens + max_tokens <= max_model_len, with vLLM's wording: "This model's maximum
// context length is N tokens. However, you requested M tokens (P in the messages, C in the
// completion). Please reduce the length of the messages or completion."
void check_context_length(int64_t prompt_tokens, int64_t max_tokens, int64_t max_model_len,
                          std::string_view input_name = "messages");

// Throws the context-length error (code "context_length_exceeded", param `input_name`) when a
// prompt of `prompt_bytes` bytes, known to hold at least `min_prompt_tokens` tokens, leaves no
// room for one generated token: decided from a length bound, before tokenizing.
void check_prompt_length_bound(int64_t min_prompt_tokens, int64_t prompt_bytes,
                               int64_t max_model_len, std::string_view input_name = "messages");

// The max_tokens a request runs with: the requested one after check_context_length, or, when
// absent, what is left of the context (max_model_len - prompt_tokens), as vLLM does. Throws the
// context-length error when the prompt leaves no room for one token, and 400 (param
// "min_tokens") when min_tokens exceeds the result.
int64_t resolve_max_tokens(const GenerationOptions& options, int64_t prompt_tokens,
                           int64_t max_model_len, std::string_view input_name = "messages");

// Throws 400 (param "prompt") when an id is >= vocab_size.
void check_prompt_token_ids(std::span<const int32_t> ids, int64_t vocab_size);

// Throws 400 (param "logit_bias") naming the first key that is not a token id of the model.
void check_logit_bias(const SamplingParams& sampling, int64_t vocab_size);

// The engine's parameters: sampling, max/min tokens, ignore_eos and stop_token_ids
// (eos_token_ids are left for the engine to fill).
RequestParams to_request_params(const GenerationOptions& options, int64_t max_tokens);

}  // namespace paceline
