#include "model/chat_template.h"

#include <fstream>
#include <sstream>

#include "base/error.h"
#include "model/jinja_template.h"

namespace paceline {

namespace fs = std::filesystem;

namespace {

std::string read_template_text(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) fail("cannot read chat template {}", file.string());
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

nlohmann::json read_tokenizer_config(const fs::path& file) {
  std::ifstream in(file);
  if (!in) fail("cannot read {}", file.string());
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    fail("{}: not valid JSON: {}", file.string(), e.what());
  }
}

std::optional<std::string> special_token_text(const nlohmann::json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_object() && value.contains("content") && value["content"].is_string()) {
    return value["content"].get<std::string>();
  }
  return std::nullopt;
}

fs::path tokenizer_folder_of(const fs::path& path) {
  return fs::is_directory(path) ? path : path.parent_path();
}

std::unique_ptr<jinja::JinjaTemplate> parse_chat_template(const std::string& source, const std::string& origin) {
  try {
    return std::make_unique<jinja::JinjaTemplate>(source);
  } catch (const Error& e) {
    fail("{}: {}", origin, e.what());
  }
}

}  // namespace

std::vector<std::pair<std::string, std::string>> chat_special_tokens(const nlohmann::json& config) {
  std::vector<std::pair<std::string, std::string>> tokens;
  if (!config.is_object()) return tokens;
  for (const auto& [key, value] : config.items()) {
    if (!key.ends_with("_token")) continue;
    if (auto text = special_token_text(value)) tokens.emplace_back(key, *text);
  }
  if (auto extra = config.find("extra_special_tokens"); extra != config.end() && extra->is_object()) {
    for (const auto& [key, value] : extra->items()) {
      if (auto text = special_token_text(value)) tokens.emplace_back(key, *text);
    }
  }
  return tokens;
}

ChatTemplate::ChatTemplate(const std::string& source,
                           std::vector<std::pair<std::string, std::string>> special_tokens,
                           std::string origin)
    : default_(parse_chat_template(source, origin)), special_tokens_(std::move(special_tokens)), origin_(std::move(origin)) {}
ChatTemplate::~ChatTemplate() = default;
ChatTemplate::ChatTemplate(ChatTemplate&&) noexcept = default;
ChatTemplate& ChatTemplate::operator=(ChatTemplate&&) noexcept = default;

std::optional<ChatTemplate> ChatTemplate::from_tokenizer_folder(const fs::path& path) {
  const fs::path folder = tokenizer_folder_of(path);
  const fs::path config_file = folder / "tokenizer_config.json";
  nlohmann::json config = fs::exists(config_file) ? read_tokenizer_config(config_file) : nlohmann::json::object();
  ChatTemplate t;
  t.special_tokens_ = chat_special_tokens(config);
  auto field = config.is_object() ? config.find("chat_template") : config.end();
  if (field != config.end() && !field->is_null()) {
    const std::string where = config_file.string() + " chat_template";
    t.origin_ = where;
    if (field->is_string()) {
      t.default_ = parse_chat_template(field->get<std::string>(), where);
      return t;
    }
    if (!field->is_array()) fail("{}: must be a string or a list of {{name, template}}, got {}", where, field->type_name());
    std::string names;
    for (size_t i = 0; i < field->size(); ++i) {
      const auto& entry = (*field)[i];
      if (!entry.is_object() || !entry.contains("name") || !entry["name"].is_string() ||
          !entry.contains("template") || !entry["template"].is_string()) {
        fail("{}[{}]: expected an object with string fields 'name' and 'template'", where, i);
      }
      const std::string name = entry["name"].get<std::string>();
      names += (names.empty() ? "" : ", ") + name;
      std::string origin = where + "[" + std::to_string(i) + "] (" + name + ")";
      if (name == "default") t.default_ = parse_chat_template(entry["template"].get<std::string>(), origin);
      if (name == "tool_use") t.tool_use_ = parse_chat_template(entry["template"].get<std::string>(), origin);
    }
    if (!t.default_) {
      fail("{}: the list has no template named 'default' (it has: {}); pass --chat-template FILE", where, names);
    }
    return t;
  }
  const fs::path jinja_file = folder / "chat_template.jinja";
  if (fs::exists(jinja_file)) {
    t.origin_ = jinja_file.string();
    t.default_ = parse_chat_template(read_template_text(jinja_file), t.origin_);
    return t;
  }
  return std::nullopt;
}

ChatTemplate ChatTemplate::from_file(const fs::path& file, const fs::path& tokenizer_folder) {
  if (!fs::is_regular_file(file)) fail("--chat-template {}: no such file", file.string());
  std::vector<std::pair<std::string, std::string>> tokens;
  const fs::path config_file = tokenizer_folder_of(tokenizer_folder) / "tokenizer_config.json";
  if (fs::exists(config_file)) tokens = chat_special_tokens(read_tokenizer_config(config_file));
  return ChatTemplate(read_template_text(file), std::move(tokens), file.string());
}

namespace {

// The messages with each assistant message's null or missing content as "", or nullopt when
// none has such content.
std::optional<nlohmann::ordered_json> with_empty_assistant_content(const nlohmann::ordered_json& messages) {
  if (!messages.is_array()) return std::nullopt;
  nlohmann::ordered_json out = messages;
  bool changed = false;
  for (auto& m : out) {
    if (!m.is_object() || m.value("role", nlohmann::ordered_json()) != "assistant") continue;
    auto content = m.find("content");
    if (content == m.end() || content->is_null()) {
      m["content"] = "";
      changed = true;
    }
  }
  return changed ? std::optional(std::move(out)) : std::nullopt;
}

}  // namespace

// Rendered as Transformers renders it. Only where that fails and an assistant message has null
// or missing content (what OpenAI clients send beside tool_calls, and what many templates
// cannot print) is it rendered again with that content as "", as vLLM passes it; templates
// that test for none (DeepSeek-V3's tool calls) see the none first.
std::string ChatTemplate::render(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                                 const ChatTemplateOptions& options) const {
  try {
    return render_as_given(messages, tools, options);
  } catch (const Error&) {
    std::optional<nlohmann::ordered_json> filled = with_empty_assistant_content(messages);
    if (!filled) throw;
    try {
      return render_as_given(*filled, tools, options);
    } catch (const Error&) {
    }
    throw;
  }
}

std::string ChatTemplate::render_as_given(const nlohmann::ordered_json& messages,
                                          const nlohmann::ordered_json& tools,
                                          const ChatTemplateOptions& options) const {
  if (!tools.is_null() && !tools.is_array()) fail("chat tools must be null or an array, got {}", tools.type_name());
  jinja::Dict variables;
  for (const auto& [name, text] : special_tokens_) variables.emplace_back(name, jinja::Value::from(text));
  variables.emplace_back("messages", jinja::value_from_json(messages));
  variables.emplace_back("tools", jinja::value_from_json(tools));
  variables.emplace_back("add_generation_prompt", jinja::Value::from(options.add_generation_prompt));
  if (options.enable_thinking) {
    variables.emplace_back("enable_thinking", jinja::Value::from(*options.enable_thinking));
  }
  const bool has_tools = tools.is_array() && !tools.empty();
  const jinja::JinjaTemplate& t = has_tools && tool_use_ ? *tool_use_ : *default_;
  try {
    return t.render(variables);
  } catch (const Error& e) {
    fail("{}: {}", origin_, e.what());
  }
}

}  // namespace paceline
