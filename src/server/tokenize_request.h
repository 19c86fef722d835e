#pragma once
// vLLM's POST /tokenize and POST /detokenize bodies (vllm/entrypoints/serve/tokenize/protocol.py)
// as plain structs, and their answers. Tokenize takes either a "prompt" (a string) or chat
// "messages" (rendered with the model's chat template, as /v1/chat/completions renders them);
// it answers {"count","max_model_len","tokens","token_strs"}. Detokenize takes "tokens" and
// answers {"prompt"}. Problems throw ApiException (400) naming the field.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "server/openai_request.h"

namespace paceline {

struct TokenizeRequest {
  std::string model;                          // empty: the served model
  std::optional<std::string> prompt;          // set: the completion form
  std::optional<ChatCompletionRequest> chat;  // set: the chat form (messages, tools, kwargs)
  bool add_generation_prompt = true;          // chat form only
  // The tokenizer's own special tokens around the text (Llama-3's <|begin_of_text|>). vLLM's
  // default: true for a prompt, false for messages (their template writes BOS itself).
  bool add_special_tokens = true;
  bool return_token_strs = false;
};

struct DetokenizeRequest {
  std::string model;
  std::vector<int32_t> tokens;  // each in [0, 2^31); the vocabulary bound is the caller's check
};

// check_content_type + parse_json_object + the field checks. Exactly one of "prompt" and
// "messages"; continue_final_message and a per-request chat_template are refused (400).
TokenizeRequest parse_tokenize_request(std::string_view body, std::string_view content_type);
DetokenizeRequest parse_detokenize_request(std::string_view body, std::string_view content_type);

// {"count":N,"max_model_len":L,"tokens":[...],"token_strs":[...]|null}
std::string tokenize_response_json(std::span<const int32_t> tokens, int64_t max_model_len,
                                   const std::vector<std::string>* token_strs);
// {"prompt":"..."}
std::string detokenize_response_json(std::string_view prompt);

}  // namespace paceline
