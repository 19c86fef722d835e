#include "model/chat_template.h"

#include <string_view>
#include <vector>

#include "base/error.h"
#include "model/chat_message.h"
#include "model/chat_tojson.h"

namespace paceline {
namespace {

// Python's str.lstrip('\n'), str.rstrip('\n') and str.strip('\n').
std::string_view lstrip_newlines(std::string_view s) {
  size_t start = s.find_first_not_of('\n');
  return start == std::string_view::npos ? std::string_view() : s.substr(start);
}
std::string_view rstrip_newlines(std::string_view s) {
  size_t end = s.find_last_not_of('\n');
  return end == std::string_view::npos ? std::string_view() : s.substr(0, end + 1);
}
std::string_view strip_newlines(std::string_view s) {
  return lstrip_newlines(rstrip_newlines(s));
}

// Python's s.split(sep)[0] and s.split(sep)[-1].
std::string_view before_first(std::string_view s, std::string_view sep) {
  size_t pos = s.find(sep);
  return pos == std::string_view::npos ? s : s.substr(0, pos);
}
std::string_view after_last(std::string_view s, std::string_view sep) {
  size_t pos = s.rfind(sep);
  return pos == std::string_view::npos ? s : s.substr(pos + sep.size());
}

constexpr std::string_view kToolsHeader =
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>";
constexpr std::string_view kToolsFooter =
    "\n</tools>\n\nFor each function call, return a json object with function name and arguments "
    "within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, "
    "\"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n";

void render_system(std::string& out, const std::vector<ChatMessage>& messages,
                   const nlohmann::ordered_json& tools) {
  bool has_system = messages[0].role == "system";
  if (!tools.empty()) {
    out += "<|im_start|>system\n";
    if (has_system) out += messages[0].content + "\n\n";
    out += kToolsHeader;
    for (const auto& tool : tools) {
      out += '\n';
      out += chat_tojson(tool);
    }
    out += kToolsFooter;
  } else if (has_system) {
    out += "<|im_start|>system\n" + messages[0].content + "<|im_end|>\n";
  }
}

// The index of the last user message that is a real query, not a wrapped tool response; thinking
// is kept only for assistant turns after it. With no such message, the last index (so none).
size_t last_query_index(const std::vector<ChatMessage>& messages) {
  for (size_t i = messages.size(); i-- > 0;) {
    const ChatMessage& m = messages[i];
    bool tool_response =
        m.content.starts_with("<tool_response>") && m.content.ends_with("</tool_response>");
    if (m.role == "user" && !tool_response) return i;
  }
  return messages.size() - 1;
}

void render_assistant(std::string& out, const ChatMessage& message, bool after_last_query,
                      bool is_last) {
  std::string_view content = message.content;
  std::string_view reasoning;
  if (message.reasoning_content) {
    reasoning = *message.reasoning_content;
  } else if (content.find("</think>") != std::string_view::npos) {
    std::string_view whole = content;
    content = lstrip_newlines(after_last(whole, "</think>"));
    reasoning =
        lstrip_newlines(after_last(rstrip_newlines(before_first(whole, "</think>")), "<think>"));
  }
  out += "<|im_start|>assistant\n";
  if (after_last_query && (is_last || !reasoning.empty())) {
    out += "<think>\n";
    out += strip_newlines(reasoning);
    out += "\n</think>\n\n";
    out += lstrip_newlines(content);
  } else {
    out += content;
  }
  for (size_t i = 0; i < message.tool_calls.size(); ++i) {
    if (i > 0 || !content.empty()) out += '\n';
    const ChatToolCall& call = message.tool_calls[i];
    out += "<tool_call>\n{\"name\": \"" + call.name + "\", \"arguments\": " + call.arguments +
           "}\n</tool_call>";
  }
  out += "<|im_end|>\n";
}

// Consecutive tool messages share one user turn, each in its own <tool_response> block.
void render_tool(std::string& out, const std::vector<ChatMessage>& messages, size_t i) {
  if (i == 0 || messages[i - 1].role != "tool") out += "<|im_start|>user";
  out += "\n<tool_response>\n" + messages[i].content + "\n</tool_response>";
  if (i + 1 == messages.size() || messages[i + 1].role != "tool") out += "<|im_end|>\n";
}

}  // namespace

std::string render_qwen3_chat(const nlohmann::ordered_json& messages_json,
                              const nlohmann::ordered_json& tools,
                              const ChatTemplateOptions& options) {
  if (!tools.is_null() && !tools.is_array()) {
    fail("chat tools must be null or an array, got {}", tools.type_name());
  }
  std::vector<ChatMessage> messages = chat_messages_from_json(messages_json);
  std::string out;
  render_system(out, messages, tools);
  size_t last_query = last_query_index(messages);
  for (size_t i = 0; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    if (m.role == "user" || (m.role == "system" && i > 0)) {
      out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
    } else if (m.role == "assistant") {
      render_assistant(out, m, i > last_query, i + 1 == messages.size());
    } else if (m.role == "tool") {
      render_tool(out, messages, i);
    }
  }
  if (options.add_generation_prompt) {
    out += "<|im_start|>assistant\n";
    if (options.enable_thinking == false) out += "<think>\n\n</think>\n\n";
  }
  return out;
}

}  // namespace paceline
