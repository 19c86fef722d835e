// libFuzzer target over the OpenAI request layer: a body is parsed as both a chat and a
// completions request. Parsing must either succeed or throw ApiException, never anything else
// (which would be a 500, or a crash). An accepted chat request must render with the Qwen3 chat
// template (third_party/qwen3-tokenizer, run by the Jinja interpreter) or be refused with
// paceline::Error (a 400), and the text parsers must give the same result streamed in pieces as
// whole.
// Built and run by scripts/fuzz.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "model/chat_template.h"
#include "server/openai_error.h"
#include "server/openai_request.h"
#include "server/openai_response.h"
#include "server/reasoning_parser.h"
#include "server/stop_strings.h"
#include "server/tool_call_parser.h"

namespace {

using namespace paceline;

void require(bool condition) {
  if (!condition) __builtin_trap();
}

void check_error_json(const ApiError& error) {
  require(error.status >= 400 && error.status < 600);
  require(!error.message.empty());
  require(nlohmann::json::accept(error_json(error)));
}

void check_stop_strings(const std::vector<std::string>& stops, std::string_view text) {
  StopStringMatcher whole(stops);
  std::string expected = whole.push(text).emit;
  if (!whole.stopped()) expected += whole.flush();
  StopStringMatcher pieces(stops);
  std::string got;
  for (size_t i = 0; i < text.size() && !pieces.stopped(); i += 3) {
    got += pieces.push(text.substr(i, 3)).emit;
  }
  if (!pieces.stopped()) got += pieces.flush();
  require(got == expected);
  require(whole.stopped() == pieces.stopped());
}

void check_tool_calls(std::string_view text) {
  ToolCallParse whole = parse_tool_calls(text, 42);
  ToolCallStreamParser parser(42);
  std::string content;
  size_t calls = 0;
  for (size_t i = 0; i < text.size(); i += 2) {
    ToolCallStreamParser::Delta d = parser.push(text.substr(i, 2));
    content += d.content;
    calls += d.calls.size();
  }
  ToolCallStreamParser::Delta d = parser.flush();
  content += d.content;
  calls += d.calls.size();
  require(content == whole.content);
  require(calls == whole.calls.size());
  ChatMessageOut message{whole.content, std::nullopt, whole.calls};
  require(nlohmann::json::accept(chat_completion_json({"id", "m", 0}, message, "stop", {})));
}

void check_reasoning(std::string_view text) {
  for (ReasoningMode mode : {ReasoningMode::kTagged, ReasoningMode::kStartsInside}) {
    ReasoningStreamParser whole(mode);
    ReasoningStreamParser::Delta a = whole.push(text);
    ReasoningStreamParser::Delta b = whole.flush();
    ReasoningStreamParser pieces(mode);
    std::string reasoning, content;
    for (size_t i = 0; i < text.size(); i += 3) {
      ReasoningStreamParser::Delta d = pieces.push(text.substr(i, 3));
      reasoning += d.reasoning;
      content += d.content;
    }
    ReasoningStreamParser::Delta d = pieces.flush();
    require(reasoning + d.reasoning == a.reasoning + b.reasoning);
    require(content + d.content == a.content + b.content);
  }
}

void fuzz_chat(std::string_view body) {
  ChatCompletionRequest request;
  try {
    request = parse_chat_completion_request(body, "application/json");
  } catch (const ApiException& e) {
    check_error_json(e.error());
    return;
  }
  static const ChatTemplate qwen3 = *ChatTemplate::from_tokenizer_folder("third_party/qwen3-tokenizer");
  ChatTemplateOptions options;
  options.enable_thinking = request.enable_thinking;
  std::string prompt;
  try {
    prompt = qwen3.render(request.messages, request.tools, options);
  } catch (const Error&) {
    return;  // the template refused these messages: a 400
  }
  try {
    int64_t max_tokens =
        resolve_max_tokens(request.options, static_cast<int64_t>(prompt.size() / 4), 4096);
    RequestParams params = to_request_params(request.options, max_tokens);
    require(params.max_tokens >= 1 && params.min_tokens <= params.max_tokens);
  } catch (const ApiException& e) {
    check_error_json(e.error());
  }
  for (const auto& message : request.messages) {
    auto content = message.find("content");
    if (content == message.end() || !content->is_string()) continue;
    const std::string& text = content->get_ref<const std::string&>();
    check_stop_strings(request.options.stop, text);
    check_tool_calls(text);
    check_reasoning(text);
  }
}

void fuzz_completion(std::string_view body) {
  try {
    CompletionRequest request = parse_completion_request(body, "application/json");
    require(request.prompt_text.has_value() != !request.prompt_token_ids.empty());
    if (request.has_token_prompt()) check_prompt_token_ids(request.prompt_token_ids, 151936);
  } catch (const ApiException& e) {
    check_error_json(e.error());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view body(reinterpret_cast<const char*>(data), size);
  fuzz_chat(body);
  fuzz_completion(body);
  return 0;
}
