#include "model/chat_message.h"

#include "base/error.h"
#include "model/chat_tojson.h"

namespace paceline {
namespace {

using Json = nlohmann::ordered_json;

std::string read_content(const Json& message, const std::string& role, size_t index) {
  auto it = message.find("content");
  bool missing = it == message.end();
  if (!missing && it->is_string()) return it->get<std::string>();
  if (role == "assistant" && (missing || it->is_null())) return "";
  if (role == "tool" && missing) return "";
  if (role == "tool" && it->is_null()) return "None";
  fail("chat messages[{}] ({}): 'content' must be a string, got {}", index, role,
       missing ? "nothing" : it->type_name());
}

std::optional<std::string> read_reasoning(const Json& message, size_t index) {
  auto it = message.find("reasoning_content");
  if (it == message.end() || it->is_null()) return std::nullopt;
  if (!it->is_string()) {
    fail("chat messages[{}]: 'reasoning_content' must be a string or null, got {}", index,
         it->type_name());
  }
  return it->get<std::string>();
}

ChatToolCall read_tool_call(const Json& call, size_t index, size_t call_index) {
  if (!call.is_object()) {
    fail("chat messages[{}].tool_calls[{}] must be an object, got {}", index, call_index,
         call.type_name());
  }
  // The template unwraps `function` only when it is truthy (present and non-empty).
  const Json* function = &call;
  auto nested = call.find("function");
  if (nested != call.end() && !nested->is_null()) {
    if (!nested->is_object()) {
      fail("chat messages[{}].tool_calls[{}].function must be an object, got {}", index, call_index,
           nested->type_name());
    }
    if (!nested->empty()) function = &*nested;
  }
  auto name = function->find("name");
  if (name == function->end() || !name->is_string()) {
    fail("chat messages[{}].tool_calls[{}]: function 'name' must be a string", index, call_index);
  }
  auto arguments = function->find("arguments");
  if (arguments == function->end()) {
    fail("chat messages[{}].tool_calls[{}]: function 'arguments' is missing", index, call_index);
  }
  return ChatToolCall{name->get<std::string>(), arguments->is_string()
                                                    ? arguments->get<std::string>()
                                                    : chat_tojson(*arguments)};
}

std::vector<ChatToolCall> read_tool_calls(const Json& message, size_t index) {
  std::vector<ChatToolCall> calls;
  auto it = message.find("tool_calls");
  if (it == message.end() || it->is_null()) return calls;
  if (!it->is_array()) {
    fail("chat messages[{}]: 'tool_calls' must be an array or null, got {}", index,
         it->type_name());
  }
  for (size_t i = 0; i < it->size(); ++i) calls.push_back(read_tool_call((*it)[i], index, i));
  return calls;
}

}  // namespace

std::vector<ChatMessage> chat_messages_from_json(const nlohmann::ordered_json& messages) {
  if (!messages.is_array()) fail("chat messages must be an array, got {}", messages.type_name());
  if (messages.empty()) fail("chat messages must not be empty");
  std::vector<ChatMessage> out;
  out.reserve(messages.size());
  for (size_t i = 0; i < messages.size(); ++i) {
    const Json& message = messages[i];
    if (!message.is_object()) {
      fail("chat messages[{}] must be an object, got {}", i, message.type_name());
    }
    auto role = message.find("role");
    if (role == message.end() || !role->is_string()) {
      fail("chat messages[{}]: 'role' must be a string", i);
    }
    const auto& name = role->get_ref<const std::string&>();
    if (name != "system" && name != "user" && name != "assistant" && name != "tool") {
      fail("chat messages[{}]: unknown role '{}' (system, user, assistant or tool)", i, name);
    }
    ChatMessage parsed;
    parsed.role = name;
    parsed.content = read_content(message, name, i);
    if (name == "assistant") {
      parsed.reasoning_content = read_reasoning(message, i);
      parsed.tool_calls = read_tool_calls(message, i);
    }
    out.push_back(std::move(parsed));
  }
  return out;
}

}  // namespace paceline
