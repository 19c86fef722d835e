#include "server/openai_request.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <memory>

#include <fmt/format.h>

#include "model/chat_message.h"
#include "server/openai_error.h"
#include "server/request_json.h"

namespace paceline {
namespace {

using Json = nlohmann::ordered_json;

constexpr size_t kMaxStopLength = 256;
constexpr size_t kMaxStopTokenIds = 1024;
constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
constexpr double kMinRepetitionPenalty = 1e-6;
constexpr double kMaxRepetitionPenalty = 1e6;

template <typename... Args>
[[noreturn]] void reject(std::string param, fmt::format_string<Args...> format, Args&&... args) {
  throw_api_error(
      invalid_request_error(fmt::format(format, std::forward<Args>(args)...), std::move(param)));
}

// The field's value, or nullptr when absent or null (OpenAI treats both as "not given").
const Json* field(const Json& object, std::string_view key) {
  auto it = object.find(key);
  return it == object.end() || it->is_null() ? nullptr : &*it;
}

std::string type_of(const Json& value) {
  if (value.is_number_integer()) return "an integer";
  if (value.is_number_float()) return "a number";
  if (value.is_string()) return "a string";
  if (value.is_boolean()) return "a boolean";
  if (value.is_array()) return "an array";
  if (value.is_object()) return "an object";
  return "null";
}

// An integer (a float with an integral value is accepted, as pydantic does) in [low, high].
int64_t integer_value(const Json& value, const std::string& param, int64_t low, int64_t high) {
  double as_double = 0.0;
  if (value.is_number_unsigned()) {
    uint64_t v = value.get<uint64_t>();
    if (v > static_cast<uint64_t>(high) || (low > 0 && v < static_cast<uint64_t>(low))) {
      reject(param, "'{}' must be between {} and {}, got {}.", param, low, high, v);
    }
    return static_cast<int64_t>(v);
  }
  if (value.is_number_integer()) {
    int64_t v = value.get<int64_t>();
    if (v < low || v > high) {
      reject(param, "'{}' must be between {} and {}, got {}.", param, low, high, v);
    }
    return v;
  }
  if (value.is_number_float()) as_double = value.get<double>();
  if (!value.is_number_float() || !std::isfinite(as_double) || std::trunc(as_double) != as_double) {
    reject(param, "'{}' must be an integer, got {}.", param, type_of(value));
  }
  // 2^63 and beyond do not fit an int64_t, even where `high` rounds up to 2^63 as a double.
  if (as_double < static_cast<double>(low) || as_double > static_cast<double>(high) ||
      as_double >= 0x1p63) {
    reject(param, "'{}' must be between {} and {}, got {}.", param, low, high, as_double);
  }
  return static_cast<int64_t>(as_double);
}

std::optional<int64_t> get_integer(const Json& body, std::string_view key, int64_t low,
                                   int64_t high) {
  const Json* value = field(body, key);
  if (!value) return std::nullopt;
  return integer_value(*value, std::string(key), low, high);
}

std::optional<double> get_number(const Json& body, std::string_view key) {
  const Json* value = field(body, key);
  if (!value) return std::nullopt;
  if (!value->is_number()) {
    reject(std::string(key), "'{}' must be a number, got {}.", key, type_of(*value));
  }
  double v = value->get<double>();
  if (!std::isfinite(v)) reject(std::string(key), "'{}' must be a finite number.", key);
  return v;
}

std::optional<bool> get_bool(const Json& object, std::string_view key, const std::string& param) {
  const Json* value = field(object, key);
  if (!value) return std::nullopt;
  if (!value->is_boolean()) {
    reject(param, "'{}' must be a boolean, got {}.", param, type_of(*value));
  }
  return value->get<bool>();
}

std::optional<std::string> get_string(const Json& object, std::string_view key,
                                      const std::string& param) {
  const Json* value = field(object, key);
  if (!value) return std::nullopt;
  if (!value->is_string()) reject(param, "'{}' must be a string, got {}.", param, type_of(*value));
  return value->get<std::string>();
}

std::vector<std::string> parse_stop(const Json& body) {
  const Json* value = field(body, "stop");
  if (!value) return {};
  std::vector<std::string> stops;
  if (value->is_string()) {
    stops.push_back(value->get<std::string>());
  } else if (value->is_array()) {
    if (value->size() > kMaxStopStrings) {
      reject("stop", "'stop' may hold at most {} strings, got {}.", kMaxStopStrings, value->size());
    }
    for (const auto& stop : *value) {
      if (!stop.is_string()) {
        reject("stop", "'stop' entries must be strings, got {}.", type_of(stop));
      }
      stops.push_back(stop.get<std::string>());
    }
  } else {
    reject("stop", "'stop' must be a string or an array of strings, got {}.", type_of(*value));
  }
  for (const auto& stop : stops) {
    if (stop.empty()) reject("stop", "'stop' strings must not be empty.");
    if (stop.size() > kMaxStopLength) {
      reject("stop", "'stop' strings must be at most {} bytes long.", kMaxStopLength);
    }
  }
  return stops;
}

std::vector<int32_t> parse_stop_token_ids(const Json& body) {
  const Json* value = field(body, "stop_token_ids");
  if (!value) return {};
  if (!value->is_array()) {
    reject("stop_token_ids", "'stop_token_ids' must be an array of integers, got {}.",
           type_of(*value));
  }
  if (value->size() > kMaxStopTokenIds) {
    reject("stop_token_ids", "'stop_token_ids' may hold at most {} ids.", kMaxStopTokenIds);
  }
  std::vector<int32_t> ids;
  for (const auto& id : *value) {
    ids.push_back(static_cast<int32_t>(integer_value(id, "stop_token_ids", 0, kInt32Max)));
  }
  return ids;
}

// A number field in [low, high], or nullopt when absent.
std::optional<double> get_ranged(const Json& body, std::string_view key, double low, double high) {
  std::optional<double> v = get_number(body, key);
  if (v && (*v < low || *v > high)) {
    reject(std::string(key), "'{}' must be in [{}, {}], got {}.", key, low, high, *v);
  }
  return v;
}

// logit_bias: an object from token ids (decimal strings, as OpenAI's) to a bias in [-100, 100].
// Whether each id is in the model's vocabulary is the caller's check (check_logit_bias).
std::shared_ptr<const std::vector<TokenBias>> parse_logit_bias(const Json& body) {
  const Json* value = field(body, "logit_bias");
  if (!value) return nullptr;
  if (!value->is_object()) {
    reject("logit_bias", "'logit_bias' must be an object from token ids to numbers, got {}.",
           type_of(*value));
  }
  auto biases = std::make_shared<std::vector<TokenBias>>();
  for (const auto& [key, bias] : value->items()) {
    const bool digits =
        !key.empty() && key.size() <= 10 &&
        std::all_of(key.begin(), key.end(), [](char c) { return c >= '0' && c <= '9'; });
    const int64_t id = digits ? std::stoll(key) : -1;
    if (id < 0 || id > kInt32Max) {
      reject("logit_bias", "'logit_bias' key '{}' is not a token id (a non-negative integer).",
             key);
    }
    if (!bias.is_number()) {
      reject("logit_bias", "'logit_bias' value of token '{}' must be a number, got {}.", key,
             type_of(bias));
    }
    const double b = bias.get<double>();
    if (!(b >= -100.0 && b <= 100.0)) {
      reject("logit_bias", "'logit_bias' value of token '{}' must be in [-100, 100], got {}.", key,
             b);
    }
    biases->push_back({static_cast<int32_t>(id), static_cast<float>(b)});
  }
  std::sort(biases->begin(), biases->end(),
            [](const TokenBias& a, const TokenBias& b) { return a.token < b.token; });
  for (size_t i = 1; i < biases->size(); ++i) {
    if ((*biases)[i].token == (*biases)[i - 1].token) {
      reject("logit_bias", "'logit_bias' names token {} twice.", (*biases)[i].token);
    }
  }
  if (biases->empty()) return nullptr;
  return biases;
}

// logit_bias, min_p and the penalties, with vLLM's ranges (presence and frequency are OpenAI's).
void parse_logits_processing(const Json& body, SamplingParams& sampling) {
  sampling.logit_bias = parse_logit_bias(body);
  sampling.min_p = get_ranged(body, "min_p", 0.0, 1.0).value_or(0.0);
  sampling.presence_penalty = get_ranged(body, "presence_penalty", -2.0, 2.0).value_or(0.0);
  sampling.frequency_penalty = get_ranged(body, "frequency_penalty", -2.0, 2.0).value_or(0.0);
  // vLLM asks only for > 0; the bounds keep the float32 division and product finite.
  sampling.repetition_penalty =
      get_ranged(body, "repetition_penalty", kMinRepetitionPenalty, kMaxRepetitionPenalty)
          .value_or(1.0);
}

GenerationOptions parse_generation_options(const Json& body) {
  GenerationOptions options;
  std::optional<int64_t> max_tokens = get_integer(body, "max_tokens", 1, kMaxTokensLimit);
  std::optional<int64_t> max_completion =
      get_integer(body, "max_completion_tokens", 1, kMaxTokensLimit);
  options.max_tokens = max_completion ? max_completion : max_tokens;
  std::optional<int64_t> min_tokens = get_integer(body, "min_tokens", 0, kMaxTokensLimit);
  if (!min_tokens) min_tokens = get_integer(body, "min_new_tokens", 0, kMaxTokensLimit);
  options.min_tokens = min_tokens.value_or(0);
  if (options.max_tokens && options.min_tokens > *options.max_tokens) {
    reject("min_tokens", "'min_tokens' ({}) must be at most 'max_tokens' ({}).", options.min_tokens,
           *options.max_tokens);
  }
  options.ignore_eos = get_bool(body, "ignore_eos", "ignore_eos").value_or(false);

  if (std::optional<double> t = get_number(body, "temperature")) {
    if (*t < 0.0 || *t > 2.0) reject("temperature", "'temperature' must be in [0, 2], got {}.", *t);
    options.sampling.temperature = *t;
  }
  if (std::optional<double> p = get_number(body, "top_p")) {
    if (*p <= 0.0 || *p > 1.0) reject("top_p", "'top_p' must be in (0, 1], got {}.", *p);
    options.sampling.top_p = *p;
  }
  if (std::optional<int64_t> k = get_integer(body, "top_k", -1, kInt32Max)) {
    options.sampling.top_k = *k == 0 ? -1 : *k;
  }
  if (std::optional<int64_t> seed = get_integer(body, "seed", kInt64Min, kInt64Max)) {
    options.sampling.seed = static_cast<uint64_t>(*seed);
  }
  options.stop = parse_stop(body);
  options.stop_token_ids = parse_stop_token_ids(body);

  options.stream = get_bool(body, "stream", "stream").value_or(false);
  if (const Json* stream_options = field(body, "stream_options")) {
    if (!options.stream) {  // OpenAI and vLLM refuse it too
      reject("stream_options", "'stream_options' is only allowed when 'stream' is true.");
    }
    if (!stream_options->is_object()) {
      reject("stream_options", "'stream_options' must be an object, got {}.",
             type_of(*stream_options));
    }
    options.include_usage =
        get_bool(*stream_options, "include_usage", "stream_options.include_usage").value_or(false);
    options.continuous_usage_stats =
        get_bool(*stream_options, "continuous_usage_stats", "stream_options.continuous_usage_stats")
            .value_or(false);
  }

  options.n = get_integer(body, "n", 1, kMaxChoices).value_or(1);
  parse_logits_processing(body, options.sampling);
  if (const Json* format = field(body, "response_format")) {
    const Json* type = format->is_object() ? field(*format, "type") : nullptr;
    if (!type || !type->is_string() || type->get_ref<const std::string&>() != "text") {
      reject("response_format",
             "'response_format' other than {{\"type\": \"text\"}} is not supported.");
    }
  }
  return options;
}

std::string parse_model(const Json& body) {
  return get_string(body, "model", "model").value_or("");
}

// A message's content: a string, or text parts joined with "\n" (as vLLM joins them).
void normalize_content(Json& message, const std::string& param) {
  auto it = message.find("content");
  if (it == message.end() || !it->is_array()) return;
  std::string text;
  for (size_t j = 0; j < it->size(); ++j) {
    const Json& part = (*it)[j];
    std::string part_param = fmt::format("{}.content[{}]", param, j);
    if (!part.is_object()) {
      reject(part_param, "'{}' must be an object, got {}.", part_param, type_of(part));
    }
    std::optional<std::string> type = get_string(part, "type", part_param + ".type");
    if (type != "text") {
      reject(part_param + ".type", "Content part type '{}' is not supported; only 'text' is.",
             type.value_or("null"));
    }
    std::optional<std::string> part_text = get_string(part, "text", part_param + ".text");
    if (!part_text) reject(part_param + ".text", "'{}.text' is missing.", part_param);
    if (j > 0) text += '\n';
    text += *part_text;
  }
  *it = std::move(text);
}

Json parse_messages(const Json& body) {
  const Json* value = field(body, "messages");
  if (!value) reject("messages", "'messages' is required.");
  if (!value->is_array()) {
    reject("messages", "'messages' must be an array, got {}.", type_of(*value));
  }
  if (value->empty()) reject("messages", "'messages' must not be empty.");
  Json messages = *value;
  for (size_t i = 0; i < messages.size(); ++i) {
    Json& message = messages[i];
    std::string param = fmt::format("messages[{}]", i);
    if (!message.is_object()) {
      reject(param, "'{}' must be an object, got {}.", param, type_of(message));
    }
    std::optional<std::string> role = get_string(message, "role", param + ".role");
    if (!role) reject(param + ".role", "'{}.role' is required.", param);
    if (*role == "developer") message["role"] = *role = "system";  // OpenAI's newer name for it
    if (*role != "system" && *role != "user" && *role != "assistant" && *role != "tool") {
      reject(param + ".role", "Unknown role '{}' in {}: expected system, user, assistant or tool.",
             *role, param);
    }
    normalize_content(message, param);
    const Json* content = field(message, "content");
    bool may_be_null = *role == "assistant" || *role == "tool";
    if (content ? !content->is_string() : !may_be_null) {
      reject(param + ".content", "'{}.content' must be a string or an array of text parts, got {}.",
             param, content ? type_of(*content) : "null");
    }
  }
  try {
    chat_messages_from_json(messages);  // what the chat template will require
  } catch (const Error& error) {
    reject("messages", "{}", error.what());
  }
  return messages;
}

Json parse_tools(const Json& body) {
  const Json* value = field(body, "tools");
  if (!value) return nullptr;
  if (!value->is_array()) reject("tools", "'tools' must be an array, got {}.", type_of(*value));
  for (size_t i = 0; i < value->size(); ++i) {
    const Json& tool = (*value)[i];
    std::string param = fmt::format("tools[{}]", i);
    if (!tool.is_object()) reject(param, "'{}' must be an object, got {}.", param, type_of(tool));
    if (get_string(tool, "type", param + ".type") != "function") {
      reject(param + ".type", "'{}.type' must be \"function\".", param);
    }
    const Json* function = field(tool, "function");
    if (!function || !function->is_object()) {
      reject(param + ".function", "'{}.function' must be an object.", param);
    }
    std::optional<std::string> name = get_string(*function, "name", param + ".function.name");
    if (!name || name->empty()) {
      reject(param + ".function.name", "'{}.function.name' must be a non-empty string.", param);
    }
    const Json* parameters = field(*function, "parameters");
    if (parameters && !parameters->is_object()) {
      reject(param + ".function.parameters", "'{}.function.parameters' must be an object.", param);
    }
  }
  return value->empty() ? Json(nullptr) : *value;
}

bool has_tool(const Json& tools, const std::string& name) {
  if (!tools.is_array()) return false;
  for (const auto& tool : tools) {
    if (tool["function"]["name"] == name) return true;
  }
  return false;
}

ToolChoice parse_tool_choice(const Json& body, const Json& tools) {
  ToolChoice choice;
  choice.mode = tools.is_null() ? ToolChoice::Mode::kNone : ToolChoice::Mode::kAuto;
  const Json* value = field(body, "tool_choice");
  if (!value) return choice;
  if (value->is_string()) {
    const auto& mode = value->get_ref<const std::string&>();
    if (mode == "none") {
      choice.mode = ToolChoice::Mode::kNone;
    } else if (mode == "auto") {
      choice.mode = ToolChoice::Mode::kAuto;
    } else if (mode == "required") {
      choice.mode = ToolChoice::Mode::kRequired;
    } else {
      reject("tool_choice",
             "'tool_choice' must be \"none\", \"auto\", \"required\" or a function, got \"{}\".",
             mode);
    }
  } else if (value->is_object()) {
    const Json* function = field(*value, "function");
    std::optional<std::string> name =
        function && function->is_object()
            ? get_string(*function, "name", "tool_choice.function.name")
            : std::nullopt;
    if (get_string(*value, "type", "tool_choice.type") != "function" || !name) {
      reject("tool_choice",
             "'tool_choice' object must be {{\"type\": \"function\", \"function\": {{\"name\": "
             "...}}}}.");
    }
    if (!has_tool(tools, *name)) {
      reject("tool_choice", "'tool_choice' names function '{}', which is not in 'tools'.", *name);
    }
    choice.mode = ToolChoice::Mode::kFunction;
    choice.function_name = *name;
  } else {
    reject("tool_choice", "'tool_choice' must be a string or an object, got {}.", type_of(*value));
  }
  if (choice.mode == ToolChoice::Mode::kRequired && tools.is_null()) {
    reject("tool_choice", "'tool_choice' \"required\" needs 'tools'.");
  }
  return choice;
}

std::optional<bool> parse_enable_thinking(const Json& body) {
  const Json* kwargs = field(body, "chat_template_kwargs");
  if (!kwargs) return std::nullopt;
  if (!kwargs->is_object()) {
    reject("chat_template_kwargs", "'chat_template_kwargs' must be an object, got {}.",
           type_of(*kwargs));
  }
  return get_bool(*kwargs, "enable_thinking", "chat_template_kwargs.enable_thinking");
}

std::vector<int32_t> parse_token_ids(const Json& ids) {
  std::vector<int32_t> out;
  out.reserve(ids.size());
  for (const auto& id : ids) {
    out.push_back(static_cast<int32_t>(integer_value(id, "prompt", 0, kInt32Max)));
  }
  return out;
}

void parse_prompt(const Json& body, CompletionRequest& request) {
  const Json* value = field(body, "prompt");
  if (!value) reject("prompt", "'prompt' is required.");
  const Json* prompt = value;
  if (value->is_array() && !value->empty() && ((*value)[0].is_string() || (*value)[0].is_array())) {
    if (value->size() != 1) reject("prompt", "Batched prompts are not supported: send one prompt.");
    prompt = &(*value)[0];
  }
  if (prompt->is_string()) {
    request.prompt_text = prompt->get<std::string>();
    if (request.prompt_text->empty()) reject("prompt", "'prompt' must not be empty.");
  } else if (prompt->is_array()) {
    if (prompt->empty()) reject("prompt", "'prompt' must not be empty.");
    request.prompt_token_ids = parse_token_ids(*prompt);
  } else {
    reject("prompt",
           "'prompt' must be a string, an array of token ids, or an array of one of them; got {}.",
           type_of(*prompt));
  }
}

}  // namespace

void check_content_type(std::string_view content_type) {
  if (content_type.empty()) return;  // no Content-Type: read as JSON, as vLLM does
  std::string_view media = content_type.substr(0, content_type.find(';'));
  while (!media.empty() && std::isspace(static_cast<unsigned char>(media.back())))
    media.remove_suffix(1);
  while (!media.empty() && std::isspace(static_cast<unsigned char>(media.front())))
    media.remove_prefix(1);
  constexpr std::string_view kJson = "application/json";
  bool json = media.size() == kJson.size();
  for (size_t i = 0; json && i < media.size(); ++i) {
    json = std::tolower(static_cast<unsigned char>(media[i])) == kJson[i];
  }
  if (!json) throw_api_error(unsupported_media_type_error(content_type));
}

Json parse_json_object(std::string_view body) {
  if (body.find_first_not_of(" \t\r\n") == std::string_view::npos) {
    reject("", "The request body is empty; a JSON object is expected.");
  }
  Json json = read_request_json(body);
  if (!json.is_object()) {
    reject("", "The request body must be a JSON object, got {}.", type_of(json));
  }
  return json;
}

ChatCompletionRequest parse_chat_completion_request(std::string_view body,
                                                    std::string_view content_type) {
  check_content_type(content_type);
  return parse_chat_completion_request(parse_json_object(body));
}

ChatCompletionRequest parse_chat_completion_request(const Json& body) {
  ChatCompletionRequest request;
  request.model = parse_model(body);
  request.messages = parse_messages(body);
  request.tools = parse_tools(body);
  request.tool_choice = parse_tool_choice(body, request.tools);
  request.enable_thinking = parse_enable_thinking(body);
  request.parallel_tool_calls =
      get_bool(body, "parallel_tool_calls", "parallel_tool_calls").value_or(true);
  request.options = parse_generation_options(body);
  const bool logprobs = get_bool(body, "logprobs", "logprobs").value_or(false);
  const std::optional<int64_t> top = get_integer(body, "top_logprobs", 0, kMaxTopLogprobs);
  if (top && *top > 0 && !logprobs) {
    reject("top_logprobs", "'top_logprobs' needs 'logprobs' set to true.");
  }
  if (logprobs) request.options.logprobs = static_cast<int32_t>(top.value_or(0));
  return request;
}

CompletionRequest parse_completion_request(std::string_view body, std::string_view content_type) {
  check_content_type(content_type);
  return parse_completion_request(parse_json_object(body));
}

CompletionRequest parse_completion_request(const Json& body) {
  CompletionRequest request;
  request.model = parse_model(body);
  parse_prompt(body, request);
  request.options = parse_generation_options(body);
  request.echo = get_bool(body, "echo", "echo").value_or(false);
  if (std::optional<int64_t> k = get_integer(body, "logprobs", 0, kMaxCompletionLogprobs)) {
    request.options.logprobs = static_cast<int32_t>(*k);
  }
  if (std::optional<int64_t> best_of = get_integer(body, "best_of", kInt64Min, kInt64Max)) {
    if (*best_of != 1) reject("best_of", "Only best_of = 1 is supported, got {}.", *best_of);
  }
  if (get_string(body, "suffix", "suffix").value_or("").size() > 0) {
    reject("suffix", "'suffix' is not supported by this server.");
  }
  return request;
}

void check_context_length(int64_t prompt_tokens, int64_t max_tokens, int64_t max_model_len,
                          std::string_view input_name) {
  if (prompt_tokens + max_tokens <= max_model_len) return;
  throw_api_error(invalid_request_error(
      fmt::format("This model's maximum context length is {} tokens. However, you requested {} "
                  "tokens ({} in the {}, {} in the completion). Please reduce the length of the "
                  "{} or completion.",
                  max_model_len, prompt_tokens + max_tokens, prompt_tokens, input_name, max_tokens,
                  input_name),
      std::string(input_name), "context_length_exceeded"));
}

void check_prompt_length_bound(int64_t min_prompt_tokens, int64_t prompt_bytes,
                               int64_t max_model_len, std::string_view input_name) {
  if (min_prompt_tokens < max_model_len) return;
  throw_api_error(invalid_request_error(
      fmt::format("This model's maximum context length is {} tokens. However, your {} ({} bytes) "
                  "hold at least {} tokens. Please reduce the length of the {}.",
                  max_model_len, input_name, prompt_bytes, min_prompt_tokens, input_name),
      std::string(input_name), "context_length_exceeded"));
}

int64_t resolve_max_tokens(const GenerationOptions& options, int64_t prompt_tokens,
                           int64_t max_model_len, std::string_view input_name) {
  int64_t max_tokens = 0;
  if (options.max_tokens) {
    max_tokens = *options.max_tokens;
    check_context_length(prompt_tokens, max_tokens, max_model_len, input_name);
  } else {
    // Room for at least one token is needed; report the prompt as the request's whole size.
    check_context_length(prompt_tokens, 1, max_model_len, input_name);
    max_tokens = max_model_len - prompt_tokens;
  }
  if (options.min_tokens > max_tokens) {
    reject("min_tokens",
           "'min_tokens' ({}) must be at most the max_tokens the request can run "
           "with ({}).",
           options.min_tokens, max_tokens);
  }
  return max_tokens;
}

void check_prompt_token_ids(std::span<const int32_t> ids, int64_t vocab_size) {
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= vocab_size) {
      reject("prompt", "Token id {} at prompt[{}] is out of vocabulary (size {}).", ids[i], i,
             vocab_size);
    }
  }
}

void check_logit_bias(const SamplingParams& sampling, int64_t vocab_size) {
  if (!sampling.logit_bias) return;
  for (const TokenBias& b : *sampling.logit_bias) {
    if (b.token >= vocab_size) {
      reject("logit_bias", "'logit_bias' key '{}' is out of vocabulary (size {}).", b.token,
             vocab_size);
    }
  }
}

RequestParams to_request_params(const GenerationOptions& options, int64_t max_tokens) {
  RequestParams params;
  params.sampling = options.sampling;
  params.max_tokens = max_tokens;
  params.min_tokens = options.min_tokens;
  params.ignore_eos = options.ignore_eos;
  params.stop_token_ids = options.stop_token_ids;
  params.logprobs = options.logprobs;
  return params;
}

}  // namespace paceline
