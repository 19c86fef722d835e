// Llama-3.1 end to end through the real server: the shipped Llama-3.x configs and a Llama-shaped
// model folder serve with the Llama-3.1 tokenizer and its own chat template, so a chat request's
// prompt is the token sequence Transformers makes (tests/fixtures/chat_template/llama3_1, made
// with apply_chat_template and `tokenizers`); --chat-template overrides the model's template, and
// a template that fails or is missing answers 400 saying why.
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "../serve/server_process.h"
#include "model/tokenizer.h"
#include "model_folder.h"

namespace paceline::testing {
namespace {

using ::testing::HasSubstr;
using Json = nlohmann::ordered_json;

Json llama_case(const std::string& name) {
  std::ifstream in(kSourceDir / "tests/fixtures/chat_template/llama3_1/cases.json");
  for (const Json& c : Json::parse(in)) {
    if (c["name"] == name) return c;
  }
  throw std::runtime_error("no Llama-3.1 fixture case " + name);
}

HttpReply chat(int port, const Json& messages, const Json& tools = Json()) {
  Json body = {{"messages", messages}, {"max_tokens", 3}, {"temperature", 0}};
  if (!tools.is_null()) body["tools"] = tools;
  return http(port, "POST", "/v1/chat/completions", body.dump());
}

// The prompt of each fixture case is as many tokens as Transformers' ids (the ids themselves are
// compared in tests/chat_template/hf_fixture_test.cpp, through the same template and tokenizer).
void expect_fixture_prompts(int port) {
  for (const char* name : {"single_user", "system_user", "multi_turn", "tools_system_user", "whitespace_content"}) {
    SCOPED_TRACE(name);
    const Json c = llama_case(name);
    HttpReply r = chat(port, c["messages"], c["tools"]);
    ASSERT_EQ(r.status, 200) << r.body;
    Json reply = Json::parse(r.body);
    EXPECT_EQ(reply["usage"]["prompt_tokens"], c["expected_ids"].size()) << r.body;
    EXPECT_NE(reply["choices"][0]["finish_reason"], "abort") << r.body;
  }
}

TEST(LlamaServe, ShippedLlamaConfigServesWithTheLlamaTemplateAndTokenizer) {
  ServerProcess server({"--device", "null"}, "llama-3.2-1b");
  EXPECT_THAT(server.startup_log(), HasSubstr("llama3_1-tokenizer/tokenizer_config.json chat_template"));
  expect_fixture_prompts(server.port());
}

TEST(LlamaServe, LlamaShapedFolderWithItsOwnTokenizerGeneratesText) {
  // llama-tiny-random's shape at Llama-3.1's vocabulary and special ids, dummy weights on the CPU.
  ModelFolder folder("llama-folder");
  folder.write_config("tests/fixtures/models/llama-tiny-random/config.json",
                      {{"vocab_size", 128256}, {"bos_token_id", 128000}, {"eos_token_id", {128001, 128008, 128009}}});
  folder.copy_tokenizer("llama3_1");
  ServerProcess server({"--load-format", "dummy"}, folder.str());
  EXPECT_THAT(server.startup_log(), HasSubstr(folder.str() + "/tokenizer_config.json chat_template"));
  expect_fixture_prompts(server.port());
  HttpReply r = chat(server.port(), llama_case("multi_turn")["messages"]);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(Json::parse(r.body)["usage"]["completion_tokens"], 3) << r.body;
}

TEST(LlamaServe, ChatTemplateFlagOverridesTheModelsTemplate) {
  ModelFolder folder("chat-template-flag");
  folder.write("mine.jinja", "<|im_start|>{{ messages[-1]['content'] | upper }}<|im_end|>\n");
  ServerProcess server({"--device", "null", "--chat-template", (folder.path() / "mine.jinja").string()});
  EXPECT_THAT(server.startup_log(), HasSubstr("chat template: " + (folder.path() / "mine.jinja").string()));
  const Tokenizer qwen3 = Tokenizer::from_file((kSourceDir / "third_party/qwen3-tokenizer").string());
  HttpReply r = chat(server.port(), Json::parse(R"([{"role": "user", "content": "hello there, world"}])"));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(Json::parse(r.body)["usage"]["prompt_tokens"],
            qwen3.encode("<|im_start|>HELLO THERE, WORLD<|im_end|>").size());
}

TEST(LlamaServe, TemplateThatRaisesAnswers400WithItsMessage) {
  ModelFolder folder("raising-template");
  folder.write("strict.jinja",
               "{% if messages[0]['role'] != 'system' %}{{ raise_exception('a system message must come "
               "first') }}{% endif %}ok");
  ServerProcess server({"--device", "null", "--chat-template", (folder.path() / "strict.jinja").string()});
  HttpReply r = chat(server.port(), Json::parse(R"([{"role": "user", "content": "hi"}])"));
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body, HasSubstr("the template raised an error: a system message must come first"));
  EXPECT_THAT(r.body, HasSubstr("line 1, column"));
}

TEST(LlamaServe, ModelWithoutAChatTemplateAnswers400SayingHowToGiveOne) {
  ModelFolder folder("no-template");
  folder.write_config("configs/models/qwen3-tiny.json");
  folder.copy_tokenizer("qwen3");
  nlohmann::json config = read_json_file(folder.path() / "tokenizer_config.json");
  config.erase("chat_template");
  folder.write("tokenizer_config.json", config.dump());
  ServerProcess server({"--device", "null"}, folder.str());
  HttpReply r = chat(server.port(), Json::parse(R"([{"role": "user", "content": "hi"}])"));
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body, HasSubstr("--chat-template FILE"));
  // Completions need no template.
  EXPECT_EQ(http(server.port(), "POST", "/v1/completions", R"({"prompt": "hi", "max_tokens": 1})").status, 200);
}

}  // namespace
}  // namespace paceline::testing
