#pragma once
// Chat messages in the OpenAI / Hugging Face shape, read from JSON into native structs and
// checked once, so that the template renderers never touch JSON (except `tojson` output).
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace paceline {

struct ChatToolCall {
  std::string name;
  std::string arguments;  // a string argument as given, anything else as its tojson text
};

struct ChatMessage {
  std::string role;  // "system", "user", "assistant" or "tool"
  // The text a Jinja template gets from `message.content`: a tool message's null prints as
  // "None" and a missing one as "", as Jinja prints them; an assistant's null or missing content
  // is "" (Jinja would raise, but OpenAI clients send it with tool_calls).
  std::string content;
  std::optional<std::string> reasoning_content;  // absent when missing or null
  std::vector<ChatToolCall> tool_calls;          // "function" nesting already removed
};

// Reads and checks `messages`: a non-empty array of objects whose "role" is one of the four
// above, with string content for system and user messages. Throws paceline::Error naming the
// message index and field.
std::vector<ChatMessage> chat_messages_from_json(const nlohmann::ordered_json& messages);

}  // namespace paceline
