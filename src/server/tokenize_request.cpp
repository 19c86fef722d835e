#include "server/tokenize_request.h"

#include <fmt/format.h>

#include "server/openai_error.h"
#include "server/openai_response.h"

namespace paceline {

// Helpers named apart from openai_request.cpp's: the module compiles as a unity build.
namespace {

using Json = nlohmann::ordered_json;

const Json* tok_field(const Json& body, const char* key) {
  auto it = body.find(key);
  return it == body.end() || it->is_null() ? nullptr : &*it;
}

[[noreturn]] void tok_reject(const std::string& param, const std::string& message) {
  throw_api_error(invalid_request_error(message, param));
}

std::optional<bool> tok_bool(const Json& body, const char* key) {
  const Json* value = tok_field(body, key);
  if (value == nullptr) return std::nullopt;
  if (!value->is_boolean()) tok_reject(key, fmt::format("'{}' must be a boolean.", key));
  return value->get<bool>();
}

std::string tok_model(const Json& body) {
  const Json* model = tok_field(body, "model");
  if (model == nullptr) return {};
  if (!model->is_string()) tok_reject("model", "'model' must be a string.");
  return model->get<std::string>();
}

}  // namespace

TokenizeRequest parse_tokenize_request(std::string_view body, std::string_view content_type) {
  check_content_type(content_type);
  const Json json = parse_json_object(body);
  TokenizeRequest r;
  r.model = tok_model(json);
  const Json* prompt = tok_field(json, "prompt");
  const Json* messages = tok_field(json, "messages");
  if (prompt != nullptr && messages != nullptr) {
    tok_reject("prompt", "Give either 'prompt' or 'messages', not both.");
  }
  if (prompt == nullptr && messages == nullptr) {
    tok_reject("prompt", "Either 'prompt' (a string) or 'messages' (a chat) is required.");
  }
  r.return_token_strs = tok_bool(json, "return_token_strs").value_or(false);
  if (prompt != nullptr) {
    if (!prompt->is_string()) tok_reject("prompt", "'prompt' must be a string.");
    r.prompt = prompt->get<std::string>();
    r.add_special_tokens = tok_bool(json, "add_special_tokens").value_or(true);
    return r;
  }
  if (tok_bool(json, "continue_final_message").value_or(false)) {
    tok_reject("continue_final_message",
               "'continue_final_message' is not supported by this server.");
  }
  if (tok_field(json, "chat_template") != nullptr) {
    tok_reject("chat_template",
               "A per-request 'chat_template' is not supported; start the server with "
               "--chat-template FILE.");
  }
  r.chat = parse_chat_completion_request(json);
  r.add_generation_prompt = tok_bool(json, "add_generation_prompt").value_or(true);
  r.add_special_tokens = tok_bool(json, "add_special_tokens").value_or(false);
  return r;
}

DetokenizeRequest parse_detokenize_request(std::string_view body, std::string_view content_type) {
  check_content_type(content_type);
  const Json json = parse_json_object(body);
  DetokenizeRequest r;
  r.model = tok_model(json);
  const Json* tokens = tok_field(json, "tokens");
  if (tokens == nullptr) tok_reject("tokens", "'tokens' (an array of token ids) is required.");
  if (!tokens->is_array()) tok_reject("tokens", "'tokens' must be an array of token ids.");
  r.tokens.reserve(tokens->size());
  for (size_t i = 0; i < tokens->size(); ++i) {
    const Json& id = (*tokens)[i];
    const std::string param = fmt::format("tokens[{}]", i);
    if (!id.is_number_integer()) tok_reject(param, fmt::format("'{}' must be an integer.", param));
    const int64_t v = id.is_number_unsigned() && id.get<uint64_t>() > INT32_MAX
                          ? int64_t{INT32_MAX} + 1
                          : id.get<int64_t>();
    if (v < 0 || v > INT32_MAX) {
      tok_reject(param,
                 fmt::format("'{}' must be a token id in [0, 2^31), got {}.", param, id.dump()));
    }
    r.tokens.push_back(static_cast<int32_t>(v));
  }
  return r;
}

std::string tokenize_response_json(std::span<const int32_t> tokens, int64_t max_model_len,
                                   const std::vector<std::string>* token_strs) {
  std::string out =
      fmt::format("{{\"count\":{},\"max_model_len\":{},\"tokens\":[", tokens.size(), max_model_len);
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (i > 0) out += ',';
    out += std::to_string(tokens[i]);
  }
  out += "],\"token_strs\":";
  if (token_strs == nullptr) {
    out += "null";
  } else {
    out += '[';
    for (size_t i = 0; i < token_strs->size(); ++i) {
      if (i > 0) out += ',';
      append_json_string(out, (*token_strs)[i]);
    }
    out += ']';
  }
  out += '}';
  return out;
}

std::string detokenize_response_json(std::string_view prompt) {
  std::string out = "{\"prompt\":";
  append_json_string(out, prompt);
  out += '}';
  return out;
}

}  // namespace paceline
