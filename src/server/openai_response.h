#pragma once
// JSON bodies of OpenAI responses, written as strings by hand: the streaming ones run once per
// generated token, so no JSON tree is built. Each builder returns one complete JSON document
// (for SSE, the payload that ResponseWriter::sse_event frames as "data: ...\n\n"; the stream
// then ends with sse_event("[DONE]")). Strings are escaped for JSON; invalid UTF-8 is replaced by
// U+FFFD so the output is always valid JSON.
//
// A chat stream is: chat_chunk(meta, {.role = true}) (role "assistant", content ""), content /
// reasoning / tool-call chunks, a chunk whose finish_reason is set (its delta may carry the last
// text), then chat_usage_chunk when stream_options.include_usage is true, then [DONE].
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "sched/request.h"
#include "server/tool_call_parser.h"

namespace paceline {

// Appends `text` as a JSON string literal, quotes included.
void append_json_string(std::string& out, std::string_view text);

// prefix + 32 lower-case hex digits, a pure function of seed: "chatcmpl-..." for chat,
// "cmpl-..." for completions.
std::string make_response_id(std::string_view prefix, uint64_t seed);

// What every object of one response repeats.
struct ResponseMeta {
  std::string id;       // "chatcmpl-..." or "cmpl-..."
  std::string model;    // the served model name
  int64_t created = 0;  // Unix seconds
};

// "stop", "length", "abort"; "tool_calls" when the response produced tool calls and the model
// stopped by itself.
std::string_view finish_reason_text(FinishReason reason, bool produced_tool_calls);

// {"prompt_tokens":P,"completion_tokens":C,"total_tokens":P+C,
//  "prompt_tokens_details":{"cached_tokens":K}}
std::string usage_json(const Usage& usage);

// The assistant message of a non-streaming chat response.
struct ChatMessageOut {
  std::optional<std::string> content;            // unset: null (e.g. only tool calls)
  std::optional<std::string> reasoning_content;  // unset: the field is left out
  std::vector<ToolCall> tool_calls;              // empty: the field is left out
};

// {"id","object":"chat.completion","created","model","choices":[{"index":0,"message":{...},
//  "logprobs":null,"finish_reason"}],"usage":{...}}
std::string chat_completion_json(const ResponseMeta& meta, const ChatMessageOut& message,
                                 std::string_view finish_reason, const Usage& usage);
// One element of "choices": {"index","message":{...},"logprobs":<logprobs>|null,"finish_reason"}.
// `logprobs` is a JSON object (openai_logprobs.h), or empty for null.
std::string chat_choice_json(int64_t index, const ChatMessageOut& message,
                             std::string_view logprobs, std::string_view finish_reason);
// A chat.completion (object "chat.completion") or text_completion body whose "choices" are the
// given JSON objects, in order.
std::string completion_body_json(const ResponseMeta& meta, std::string_view object,
                                 std::span<const std::string> choices, const Usage& usage);

// One streamed delta; every unset field is left out of the delta object.
struct ChatDelta {
  bool role = false;  // "role":"assistant" (the first chunk; with content "" unless given)
  std::optional<std::string_view> content = std::nullopt;
  std::optional<std::string_view> reasoning_content = std::nullopt;
  std::span<const ToolCall> tool_calls = {};  // each with "index"
};

// {"id","object":"chat.completion.chunk","created","model","choices":[{"index":0,
//  "delta":{...},"logprobs":null,"finish_reason":null|"..."}]}
// `index` is the choice's (n > 1); `logprobs` a JSON object for the delta's tokens, or empty.
std::string chat_chunk(const ResponseMeta& meta, const ChatDelta& delta,
                       std::optional<std::string_view> finish_reason = std::nullopt,
                       int64_t index = 0, std::string_view logprobs = {});
// The last chunk when include_usage is true: "choices":[] and "usage":{...}.
std::string chat_usage_chunk(const ResponseMeta& meta, const Usage& usage);

// {"id","object":"text_completion","created","model","choices":[{"index":0,"text",
//  "logprobs":null,"finish_reason"}],"usage":{...}}
std::string text_completion_json(const ResponseMeta& meta, std::string_view text,
                                 std::string_view finish_reason, const Usage& usage);
// One element of "choices": {"index","text","logprobs":<logprobs>|null,"finish_reason"}.
std::string text_choice_json(int64_t index, std::string_view text, std::string_view logprobs,
                             std::string_view finish_reason);
// A streamed text_completion object with one choice carrying `text`.
std::string completion_chunk(const ResponseMeta& meta, std::string_view text,
                             std::optional<std::string_view> finish_reason = std::nullopt,
                             int64_t index = 0, std::string_view logprobs = {});
// The last chunk when include_usage is true: "choices":[] and "usage":{...}.
std::string completion_usage_chunk(const ResponseMeta& meta, const Usage& usage);

struct ModelCard {
  std::string id;       // served model name
  int64_t created = 0;  // Unix seconds
  std::string root;     // the model path or config it was loaded from
  int64_t max_model_len = 0;
};

// One card, as GET /v1/models/{id} answers: {"id","object":"model","created",
//  "owned_by":"paceline","root","parent":null,"max_model_len"}
std::string model_card_json(const ModelCard& model);
// {"object":"list","data":[{"id","object":"model","created","owned_by":"paceline","root",
//  "parent":null,"max_model_len"}]}
std::string models_list_json(std::span<const ModelCard> models);

}  // namespace paceline
