#pragma once
// The Qwen3 chat template (the "chat_template" of Qwen3's tokenizer_config.json), rendered in
// C++ byte for byte as Hugging Face transformers renders it with
// tokenizer.apply_chat_template(messages, tools=..., add_generation_prompt=...,
// enable_thinking=..., tokenize=False). Not a Jinja engine: this template's logic, by hand.
// See docs/chat_template.md.
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace paceline {

struct ChatTemplateOptions {
  bool add_generation_prompt = true;
  // Only `false` changes the text: it pre-fills an empty think block after the generation prompt.
  // Unset (not passed to the template) and `true` render the same.
  std::optional<bool> enable_thinking;
};

// `messages`: array of {"role", "content", "reasoning_content"?, "tool_calls"?} objects (see
// chat_message.h for what is accepted). `tools`: null or an array of tool schemas, each written
// with tojson in key order. Throws paceline::Error on malformed input, naming message and field.
std::string render_qwen3_chat(const nlohmann::ordered_json& messages,
                              const nlohmann::ordered_json& tools,
                              const ChatTemplateOptions& options);

}  // namespace paceline
