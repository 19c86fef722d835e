// libFuzzer target over the Qwen3 chat template (tokenizer_config.json's, through the Jinja
// interpreter). The input is JSON: either a messages array, or
// an object {"messages", "tools", "enable_thinking", "add_generation_prompt"}. Properties:
// rendering either succeeds or throws paceline::Error (a JSON library exception here would reach
// the user as a 500); the prompt is valid UTF-8; it ends with the generation prompt when one is
// asked for; and the `tojson` text of every tool reads back as the same JSON value.
// Built and run by scripts/fuzz.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "fuzz/fuzz_check.h"
#include "model/chat_template.h"
#include "model/chat_tojson.h"
#include "model/utf8.h"

namespace {

using namespace paceline;
using paceline::fuzz::require;
using Json = nlohmann::ordered_json;

void check_tojson(const Json& value) {
  std::string text = chat_tojson(value);
  require(utf8_is_valid(text), "tojson gave invalid UTF-8");
  Json back = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  require(!back.is_discarded(), "tojson gave text that is not JSON");
  require(back == value, "tojson text reads back as another value");
}

void render(const Json& messages, const Json& tools, const ChatTemplateOptions& options) {
  // The model's own template through the Jinja interpreter, as the server renders it.
  static const ChatTemplate qwen3 =
      *ChatTemplate::from_tokenizer_folder("third_party/qwen3-tokenizer");
  std::string prompt;
  try {
    prompt = qwen3.render(messages, tools, options);
  } catch (const Error&) {
    return;
  }
  require(utf8_is_valid(prompt), "the prompt is invalid UTF-8");
  std::string_view tail = options.enable_thinking == false
                              ? "<|im_start|>assistant\n<think>\n\n</think>\n\n"
                              : "<|im_start|>assistant\n";
  if (options.add_generation_prompt) require(prompt.ends_with(tail), "no generation prompt");
  if (tools.is_array()) {
    for (const Json& tool : tools) check_tojson(tool);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  Json doc = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return 0;
  ChatTemplateOptions options;
  if (!doc.is_object()) {
    render(doc, Json(), options);
    return 0;
  }
  const Json none;
  auto field = [&](const char* key) -> const Json& {
    auto it = doc.find(key);
    return it == doc.end() ? none : *it;
  };
  if (field("enable_thinking").is_boolean()) {
    options.enable_thinking = field("enable_thinking").get<bool>();
  }
  if (field("add_generation_prompt").is_boolean()) {
    options.add_generation_prompt = field("add_generation_prompt").get<bool>();
  }
  render(field("messages"), field("tools"), options);
  return 0;
}
