#include "bench/sse_openai.h"

#include <nlohmann/json.hpp>

namespace paceline::bench {

namespace {

using Json = nlohmann::json;

constexpr size_t kMaxErrorText = 2048;

bool non_empty_string(const Json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() && !it->get_ref<const std::string&>().empty();
}

bool non_empty_array(const Json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_array() && !it->empty();
}

int64_t integer_or(const Json& object, const char* key, int64_t fallback) {
  auto it = object.find(key);
  return it != object.end() && it->is_number_integer() ? it->get<int64_t>() : fallback;
}

bool choice_has_content(const Json& choice) {
  if (!choice.is_object()) return false;
  if (non_empty_string(choice, "text")) return true;  // /v1/completions
  auto delta = choice.find("delta");
  if (delta == choice.end() || !delta->is_object()) return false;
  return non_empty_string(*delta, "content") || non_empty_string(*delta, "reasoning_content") ||
         non_empty_string(*delta, "reasoning") || non_empty_array(*delta, "tool_calls");
}

Usage parse_usage(const Json& u) {
  Usage usage;
  usage.prompt_tokens = integer_or(u, "prompt_tokens", -1);
  usage.completion_tokens = integer_or(u, "completion_tokens", -1);
  auto details = u.find("prompt_tokens_details");
  if (details != u.end() && details->is_object()) {
    usage.cached_tokens = integer_or(*details, "cached_tokens", -1);
  }
  return usage;
}

std::string cut(std::string_view text) {
  if (text.size() <= kMaxErrorText) return std::string(text);
  return std::string(text.substr(0, kMaxErrorText)) + "...";
}

// The message inside an error value: a string, or an object with "message".
std::optional<std::string> message_of(const Json& error) {
  if (error.is_string()) return error.get<std::string>();
  if (error.is_object()) {
    auto m = error.find("message");
    if (m != error.end() && m->is_string()) return m->get<std::string>();
    return error.dump();
  }
  return std::nullopt;
}

}  // namespace

OpenAiChunk parse_openai_chunk(std::string_view data) {
  OpenAiChunk chunk;
  if (data == "[DONE]") {
    chunk.done = true;
    return chunk;
  }
  Json j = Json::parse(data, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    chunk.error = true;
    chunk.error_status = 200;
    chunk.error_text = "malformed stream chunk: " + cut(data);
    return chunk;
  }
  if (auto e = j.find("error"); e != j.end() && !e->is_null()) {
    chunk.error = true;
    int64_t code = e->is_object() ? integer_or(*e, "code", 0) : 0;
    chunk.error_status = code >= 100 && code <= 599 ? static_cast<int>(code) : 500;
    chunk.error_text = cut(message_of(*e).value_or(e->dump()));
    return chunk;
  }
  if (auto choices = j.find("choices"); choices != j.end() && choices->is_array()) {
    for (const Json& choice : *choices) {
      if (choice_has_content(choice)) {
        chunk.content = true;
        break;
      }
    }
  }
  if (auto u = j.find("usage"); u != j.end() && u->is_object()) chunk.usage = parse_usage(*u);
  return chunk;
}

std::string error_message_from_body(std::string_view body) {
  Json j = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_discarded() && j.is_object()) {
    for (const char* key : {"error", "message", "detail"}) {
      auto it = j.find(key);
      if (it == j.end()) continue;
      if (auto m = message_of(*it)) return cut(*m);
      if (!it->is_null()) return cut(it->dump());
    }
  }
  return cut(body);
}

OpenAiStreamReader::Step OpenAiStreamReader::feed(std::string_view bytes) {
  parser_.feed(bytes, events_);
  return consume();
}

OpenAiStreamReader::Step OpenAiStreamReader::finish() {
  parser_.finish(events_);
  return consume();
}

OpenAiStreamReader::Step OpenAiStreamReader::consume() {
  Step step;
  for (const SseEvent& event : events_) {
    if (done_ || step.error) break;  // nothing after the end counts
    OpenAiChunk chunk = parse_openai_chunk(event.data);
    if (chunk.error) {
      step.error = true;
      step.error_status = chunk.error_status;
      step.error_text = std::move(chunk.error_text);
      break;
    }
    if (chunk.done) {
      done_ = true;
      step.done = true;
      break;
    }
    if (chunk.content) {
      ++step.content_chunks;
      ++content_chunks_;
    }
    if (chunk.usage) {
      usage_ = *chunk.usage;
      usage_seen_ = true;
    }
  }
  events_.clear();
  return step;
}

}  // namespace paceline::bench
