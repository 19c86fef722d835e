#include "server/openai_response.h"

#include <iterator>

#include <fmt/format.h>

#include "base/json_escape.h"
#include "model/utf8.h"

namespace paceline {
namespace {

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// The head every object of a response shares: {"id":..,"object":..,"created":..,"model":..
void append_head(std::string& out, const ResponseMeta& meta, std::string_view object) {
  out += R"({"id":)";
  append_json_string(out, meta.id);
  out += R"(,"object":")";
  out += object;
  fmt::format_to(std::back_inserter(out), R"(","created":{},"model":)", meta.created);
  append_json_string(out, meta.model);
}

void append_finish_reason(std::string& out, std::optional<std::string_view> finish_reason) {
  out += R"(,"finish_reason":)";
  if (finish_reason) {
    append_json_string(out, *finish_reason);
  } else {
    out += "null";
  }
}

void append_logprobs(std::string& out, std::string_view logprobs) {
  out += R"(,"logprobs":)";
  if (logprobs.empty()) {
    out += "null";
  } else {
    out += logprobs;
  }
}

void append_usage(std::string& out, const Usage& usage) {
  fmt::format_to(std::back_inserter(out),
                 R"({{"prompt_tokens":{},"completion_tokens":{},"total_tokens":{},)"
                 R"("prompt_tokens_details":{{"cached_tokens":{}}}}})",
                 usage.prompt_tokens, usage.completion_tokens,
                 usage.prompt_tokens + usage.completion_tokens, usage.cached_tokens);
}

void append_tool_call(std::string& out, const ToolCall& call, bool with_index) {
  out += '{';
  if (with_index) fmt::format_to(std::back_inserter(out), R"("index":{},)", call.index);
  out += R"("id":)";
  append_json_string(out, call.id);
  out += R"(,"type":"function","function":{"name":)";
  append_json_string(out, call.name);
  out += R"(,"arguments":)";
  append_json_string(out, call.arguments);
  out += "}}";
}

void append_tool_calls(std::string& out, std::span<const ToolCall> calls, bool with_index) {
  out += R"("tool_calls":[)";
  for (size_t i = 0; i < calls.size(); ++i) {
    if (i > 0) out += ',';
    append_tool_call(out, calls[i], with_index);
  }
  out += ']';
}

std::string usage_chunk(const ResponseMeta& meta, std::string_view object, const Usage& usage) {
  std::string out;
  out.reserve(256);
  append_head(out, meta, object);
  out += R"(,"choices":[],"usage":)";
  append_usage(out, usage);
  out += '}';
  return out;
}

}  // namespace

void append_json_string(std::string& out, std::string_view text) {
  out += '"';
  bool ascii = true;
  for (char c : text) {
    if (static_cast<unsigned char>(c) >= 0x80) {
      ascii = false;
      break;
    }
  }
  if (ascii || utf8_is_valid(text)) {
    append_json_escaped(out, text);
  } else {
    append_json_escaped(out, utf8_repair(text));
  }
  out += '"';
}

std::string make_response_id(std::string_view prefix, uint64_t seed) {
  uint64_t state = seed;
  uint64_t high = splitmix64(state);
  uint64_t low = splitmix64(state);
  return fmt::format("{}{:016x}{:016x}", prefix, high, low);
}

std::string_view finish_reason_text(FinishReason reason, bool produced_tool_calls) {
  switch (reason) {
    case FinishReason::kStop:
      return produced_tool_calls ? "tool_calls" : "stop";
    case FinishReason::kLength:
      return "length";
    case FinishReason::kAbort:
      return "abort";
  }
  return "stop";
}

std::string usage_json(const Usage& usage) {
  std::string out;
  append_usage(out, usage);
  return out;
}

std::string chat_choice_json(int64_t index, const ChatMessageOut& message,
                             std::string_view logprobs, std::string_view finish_reason) {
  std::string out;
  out.reserve(256 + logprobs.size() + (message.content ? message.content->size() : 0) +
              (message.reasoning_content ? message.reasoning_content->size() : 0));
  fmt::format_to(std::back_inserter(out), R"({{"index":{},"message":{{"role":"assistant","content":)",
                 index);
  if (message.content) {
    append_json_string(out, *message.content);
  } else {
    out += "null";
  }
  if (message.reasoning_content) {
    out += R"(,"reasoning_content":)";
    append_json_string(out, *message.reasoning_content);
  }
  if (!message.tool_calls.empty()) {
    out += ',';
    append_tool_calls(out, message.tool_calls, false);
  }
  out += '}';
  append_logprobs(out, logprobs);
  append_finish_reason(out, finish_reason);
  out += '}';
  return out;
}

std::string completion_body_json(const ResponseMeta& meta, std::string_view object,
                                 std::span<const std::string> choices, const Usage& usage) {
  size_t size = 256;
  for (const auto& c : choices) size += c.size() + 1;
  std::string out;
  out.reserve(size);
  append_head(out, meta, object);
  out += R"(,"choices":[)";
  for (size_t i = 0; i < choices.size(); ++i) {
    if (i > 0) out += ',';
    out += choices[i];
  }
  out += R"(],"usage":)";
  append_usage(out, usage);
  out += '}';
  return out;
}

std::string chat_completion_json(const ResponseMeta& meta, const ChatMessageOut& message,
                                 std::string_view finish_reason, const Usage& usage) {
  const std::string choice = chat_choice_json(0, message, {}, finish_reason);
  return completion_body_json(meta, "chat.completion", std::span<const std::string>(&choice, 1),
                              usage);
}

std::string chat_chunk(const ResponseMeta& meta, const ChatDelta& delta,
                       std::optional<std::string_view> finish_reason, int64_t index,
                       std::string_view logprobs) {
  std::string out;
  out.reserve(192 + logprobs.size() + (delta.content ? delta.content->size() : 0) +
              (delta.reasoning_content ? delta.reasoning_content->size() : 0));
  append_head(out, meta, "chat.completion.chunk");
  fmt::format_to(std::back_inserter(out), R"(,"choices":[{{"index":{},"delta":{{)", index);
  bool first = true;
  auto field = [&](std::string_view name) {
    if (!first) out += ',';
    first = false;
    out += '"';
    out += name;
    out += "\":";
  };
  if (delta.role) {
    field("role");
    out += R"("assistant")";
  }
  if (delta.content || delta.role) {
    field("content");
    append_json_string(out, delta.content.value_or(""));
  }
  if (delta.reasoning_content) {
    field("reasoning_content");
    append_json_string(out, *delta.reasoning_content);
  }
  if (!delta.tool_calls.empty()) {
    if (!first) out += ',';
    first = false;
    append_tool_calls(out, delta.tool_calls, true);
  }
  out += '}';
  append_logprobs(out, logprobs);
  append_finish_reason(out, finish_reason);
  out += "}]}";
  return out;
}

std::string chat_usage_chunk(const ResponseMeta& meta, const Usage& usage) {
  return usage_chunk(meta, "chat.completion.chunk", usage);
}

std::string text_choice_json(int64_t index, std::string_view text, std::string_view logprobs,
                             std::string_view finish_reason) {
  std::string out;
  out.reserve(96 + text.size() + logprobs.size());
  fmt::format_to(std::back_inserter(out), R"({{"index":{},"text":)", index);
  append_json_string(out, text);
  append_logprobs(out, logprobs);
  append_finish_reason(out, finish_reason);
  out += '}';
  return out;
}

std::string text_completion_json(const ResponseMeta& meta, std::string_view text,
                                 std::string_view finish_reason, const Usage& usage) {
  const std::string choice = text_choice_json(0, text, {}, finish_reason);
  return completion_body_json(meta, "text_completion", std::span<const std::string>(&choice, 1),
                              usage);
}

std::string completion_chunk(const ResponseMeta& meta, std::string_view text,
                             std::optional<std::string_view> finish_reason, int64_t index,
                             std::string_view logprobs) {
  std::string out;
  out.reserve(192 + text.size() + logprobs.size());
  append_head(out, meta, "text_completion");
  fmt::format_to(std::back_inserter(out), R"(,"choices":[{{"index":{},"text":)", index);
  append_json_string(out, text);
  append_logprobs(out, logprobs);
  append_finish_reason(out, finish_reason);
  out += "}]}";
  return out;
}

std::string completion_usage_chunk(const ResponseMeta& meta, const Usage& usage) {
  return usage_chunk(meta, "text_completion", usage);
}

std::string model_card_json(const ModelCard& model) {
  std::string out = R"({"id":)";
  append_json_string(out, model.id);
  fmt::format_to(std::back_inserter(out), R"(,"object":"model","created":{},)", model.created);
  out += R"("owned_by":"paceline","root":)";
  append_json_string(out, model.root);
  fmt::format_to(std::back_inserter(out), R"(,"parent":null,"max_model_len":{}}})",
                 model.max_model_len);
  return out;
}

std::string models_list_json(std::span<const ModelCard> models) {
  std::string out = R"({"object":"list","data":[)";
  for (size_t i = 0; i < models.size(); ++i) {
    if (i > 0) out += ',';
    out += model_card_json(models[i]);
  }
  out += "]}";
  return out;
}

}  // namespace paceline
