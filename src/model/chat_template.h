#pragma once
// A model's chat template: the Jinja `chat_template` of its tokenizer_config.json (or a file
// given with --chat-template, vLLM's flag), rendered by paceline's Jinja interpreter
// (model/jinja_template.h) as Hugging Face transformers renders it with
// tokenizer.apply_chat_template(messages, tools=..., add_generation_prompt=..., tokenize=False,
// **kwargs). See docs/chat_template.md.
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace paceline {

namespace jinja {
class JinjaTemplate;
}

struct ChatTemplateOptions {
  bool add_generation_prompt = true;
  // Passed to the template only when set (Qwen3 reads it: `false` pre-fills an empty think
  // block); other templates ignore it.
  std::optional<bool> enable_thinking;
};

class ChatTemplate {
 public:
  // `source`: the Jinja text. `special_tokens`: the names a template may read (bos_token,
  // eos_token...) with their text. `origin` names where the template came from, for errors.
  // Throws paceline::Error naming origin, line and column on a syntax error.
  ChatTemplate(const std::string& source, std::vector<std::pair<std::string, std::string>> special_tokens,
               std::string origin);
  ~ChatTemplate();
  ChatTemplate(ChatTemplate&&) noexcept;
  ChatTemplate& operator=(ChatTemplate&&) noexcept;

  // The template of a tokenizer folder (or of the folder holding `path` when it is a file):
  // tokenizer_config.json's "chat_template", a string or Transformers' named list (its
  // "default" entry, or "tool_use" when tools are given), else chat_template.jinja beside it.
  // nullopt when the folder has neither.
  static std::optional<ChatTemplate> from_tokenizer_folder(const std::filesystem::path& path);
  // A template file given by the user, with the special tokens of `tokenizer_folder`'s
  // tokenizer_config.json when it has one.
  static ChatTemplate from_file(const std::filesystem::path& file,
                                const std::filesystem::path& tokenizer_folder);

  // `messages`: the OpenAI / Hugging Face message array, given to the template as is. `tools`:
  // null or an array of tool schemas. Throws paceline::Error naming origin, line and column when
  // the template fails or raises (e.g. "Conversation roles must alternate"). Where the template
  // fails on an assistant message's null or missing content, that content renders as "".
  std::string render(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                     const ChatTemplateOptions& options) const;

  const std::string& origin() const { return origin_; }

 private:
  std::string render_as_given(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                              const ChatTemplateOptions& options) const;

  std::unique_ptr<jinja::JinjaTemplate> default_;
  std::unique_ptr<jinja::JinjaTemplate> tool_use_;  // the named list's "tool_use", if any
  std::vector<std::pair<std::string, std::string>> special_tokens_;
  std::string origin_;

  ChatTemplate() = default;
};

// The special tokens of a tokenizer_config.json, as Transformers hands them to templates:
// every top-level "*_token" whose value is a string or an AddedToken object, and the entries of
// "extra_special_tokens".
std::vector<std::pair<std::string, std::string>> chat_special_tokens(const nlohmann::json& config);

}  // namespace paceline
