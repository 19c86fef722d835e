// Where a model's chat template comes from: tokenizer_config.json's "chat_template" (a string or
// Transformers' named list), chat_template.jinja beside it, or a --chat-template file; and the
// special tokens the template reads.
#include <filesystem>
#include <fstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "model/chat_template.h"

namespace paceline {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;
using ::testing::HasSubstr;

class TemplateFolder : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("paceline-chat-template-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  void write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name, std::ios::binary) << text;
  }

  static std::string hi(const ChatTemplate& t, const Json& tools = Json()) {
    return t.render(Json::parse(R"([{"role": "user", "content": "hi"}])"), tools, ChatTemplateOptions{});
  }

  fs::path dir_;
};

TEST_F(TemplateFolder, StringTemplateReadsTheSpecialTokensOfTheConfig) {
  Json config = {{"bos_token", {{"__type", "AddedToken"}, {"content", "<s>"}}},
                 {"eos_token", "</s>"},
                 {"unk_token", nullptr},
                 {"extra_special_tokens", {{"image_token", "<img>"}}},
                 {"chat_template", "{{ bos_token }}{{ messages[0].content }}{{ eos_token }}{{ image_token }}"
                                   "{{ unk_token is defined }}{% if add_generation_prompt %}>{% endif %}"}};
  write("tokenizer_config.json", config.dump());
  auto t = ChatTemplate::from_tokenizer_folder(dir_);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(hi(*t), "<s>hi</s><img>False>");
}

TEST_F(TemplateFolder, NamedListUsesDefaultAndToolUseWhenToolsAreGiven) {
  Json config = {{"chat_template", Json::array({{{"name", "tool_use"}, {"template", "tools:{{ tools | length }}"}},
                                                {{"name", "default"}, {"template", "plain"}}})}};
  write("tokenizer_config.json", config.dump());
  auto t = ChatTemplate::from_tokenizer_folder(dir_ / "tokenizer.json");  // a file in the folder works too
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(hi(*t), "plain");
  EXPECT_EQ(hi(*t, Json::array()), "plain");
  EXPECT_EQ(hi(*t, Json::parse(R"([{"name": "f"}])")), "tools:1");
}

TEST_F(TemplateFolder, NamedListWithoutDefaultIsAnErrorListingTheNames) {
  write("tokenizer_config.json", R"({"chat_template": [{"name": "rag", "template": "x"}]})");
  try {
    ChatTemplate::from_tokenizer_folder(dir_);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("no template named 'default' (it has: rag)"));
    EXPECT_THAT(e.what(), HasSubstr("--chat-template"));
  }
}

TEST_F(TemplateFolder, JinjaFileBesideTheConfigWhenTheConfigHasNone) {
  write("tokenizer_config.json", R"({"eos_token": "</s>"})");
  write("chat_template.jinja", "{{ messages | length }}{{ eos_token }}\n");
  auto t = ChatTemplate::from_tokenizer_folder(dir_);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(hi(*t), "1</s>");
}

TEST_F(TemplateFolder, NoTemplateAtAllIsNullopt) {
  write("tokenizer_config.json", R"({"eos_token": "</s>"})");
  EXPECT_FALSE(ChatTemplate::from_tokenizer_folder(dir_).has_value());
}

TEST_F(TemplateFolder, FileOverridesWithTheFoldersSpecialTokens) {
  write("tokenizer_config.json", R"({"bos_token": "<s>", "chat_template": "config"})");
  write("mine.jinja", "mine {{ bos_token }}{{ messages[0]['content'] }}");
  EXPECT_EQ(hi(ChatTemplate::from_file(dir_ / "mine.jinja", dir_)), "mine <s>hi");
  EXPECT_THAT([&] {
    try {
      ChatTemplate::from_file(dir_ / "absent.jinja", dir_);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  }(), HasSubstr("absent.jinja: no such file"));
}

TEST_F(TemplateFolder, SyntaxAndRenderErrorsNameTheOriginLineAndColumn) {
  write("bad.jinja", "ok\n{% if %}");
  try {
    ChatTemplate::from_file(dir_ / "bad.jinja", dir_);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("bad.jinja: chat template line 2, column 7"));
  }
  write("raise.jinja", "{{ raise_exception('no system role') }}");
  try {
    hi(ChatTemplate::from_file(dir_ / "raise.jinja", dir_));
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("raise.jinja: chat template line 1, column 4: the template raised an "
                                    "error: no system role"));
  }
}

}  // namespace
}  // namespace paceline
