// Every case of the chat-template fixtures (rendered by Hugging Face transformers'
// apply_chat_template(..., tokenize=False) with each model's own tokenizer files) must render
// byte for byte the same here, through the model's tokenizer_config.json; the cases the template
// refused in Transformers must be refused here with the template's message; and for the
// tokenizers paceline loads, the rendered text must encode to Transformers' ids.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "model/chat_template.h"
#include "model/tokenizer.h"

namespace paceline {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

const fs::path kSource(PACELINE_SOURCE_DIR);

// Makes a slice of rendered text readable on one line: newlines and tabs shown as escapes.
std::string visible(const std::string& text, size_t begin, size_t end) {
  std::string out;
  for (size_t i = begin; i < std::min(end, text.size()); ++i) {
    if (text[i] == '\n') {
      out += "\\n";
    } else if (text[i] == '\t') {
      out += "\\t";
    } else {
      out += text[i];
    }
  }
  return out;
}

// Empty when equal; otherwise the first differing byte with its line, column and context.
std::string first_difference(const std::string& expected, const std::string& actual) {
  if (expected == actual) return "";
  size_t pos = 0;
  while (pos < expected.size() && pos < actual.size() && expected[pos] == actual[pos]) ++pos;
  size_t line = 1 + std::count(expected.begin(), expected.begin() + pos, '\n');
  size_t line_start = expected.rfind('\n', pos == 0 ? 0 : pos - 1);
  size_t column = line_start == std::string::npos || pos == 0 ? pos + 1 : pos - line_start;
  size_t from = pos < 40 ? 0 : pos - 40;
  return "first difference at byte " + std::to_string(pos) + " (line " + std::to_string(line) +
         ", column " + std::to_string(column) + "); sizes " + std::to_string(expected.size()) +
         " expected, " + std::to_string(actual.size()) + " actual\n  expected: ..." +
         visible(expected, from, pos) + "[[" + visible(expected, pos, pos + 40) +
         "]]\n  actual:   ..." + visible(actual, from, pos) + "[[" +
         visible(actual, pos, pos + 40) + "]]";
}

Json read_json(const fs::path& file) {
  std::ifstream in(file);
  if (!in) throw std::runtime_error("cannot read " + file.string());
  return Json::parse(in);
}

struct Suite {
  const char* name;
  const char* tokenizer;  // under third_party/, fetched by scripts/setup
  const char* cases;      // under tests/fixtures/
  const char* manifest;   // the generator's manifest with the refused cases (not for Qwen3)
  bool check_ids;         // paceline loads this tokenizer: compare expected_ids too
  size_t min_cases;
};

const Suite kSuites[] = {
    {"qwen3", "qwen3-tokenizer", "chat_template/cases.json", "", true, 59},
    {"llama3_1", "llama3_1-tokenizer", "chat_template/llama3_1/cases.json",
     "chat_template/llama3_1/manifest.json", true, 28},
    {"deepseek_v3", "deepseek_v3-tokenizer", "chat_template/deepseek_v3/cases.json",
     "chat_template/deepseek_v3/manifest.json", false, 30},
    {"gemma3", "gemma3-tokenizer", "chat_template/gemma3/cases.json",
     "chat_template/gemma3/manifest.json", false, 22},
};

void PrintTo(const Suite& s, std::ostream* os) { *os << s.name; }

ChatTemplateOptions options_of(const Json& c) {
  ChatTemplateOptions options;
  options.add_generation_prompt = c.value("add_generation_prompt", true);
  if (c.contains("enable_thinking") && !c["enable_thinking"].is_null()) {
    options.enable_thinking = c["enable_thinking"].get<bool>();
  }
  return options;
}

class HfFixture : public ::testing::TestWithParam<Suite> {};

TEST_P(HfFixture, EveryCaseRendersByteForByte) {
  const Suite& s = GetParam();
  const fs::path folder = kSource / "third_party" / s.tokenizer;
  ASSERT_TRUE(fs::exists(folder / "tokenizer_config.json")) << folder << " is missing: run scripts/setup";
  std::optional<ChatTemplate> chat = ChatTemplate::from_tokenizer_folder(folder);
  ASSERT_TRUE(chat.has_value()) << "no chat template in " << folder;
  std::optional<Tokenizer> tokenizer;
  if (s.check_ids) tokenizer = Tokenizer::from_file(folder.string());

  Json cases = read_json(kSource / "tests/fixtures" / s.cases);
  ASSERT_TRUE(cases.is_array());
  EXPECT_GE(cases.size(), s.min_cases);
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(s.name) + " case " + c.value("name", std::string("(unnamed)")));
    Json tools = c.contains("tools") ? c["tools"] : Json();
    ASSERT_TRUE(c.contains("expected") && c["expected"].is_string()) << "no expected text";
    std::string actual;
    try {
      actual = chat->render(c["messages"], tools, options_of(c));
    } catch (const Error& e) {
      ADD_FAILURE() << "threw: " << e.what();
      continue;
    }
    std::string diff = first_difference(c["expected"].get<std::string>(), actual);
    EXPECT_TRUE(diff.empty()) << diff;
    if (tokenizer && diff.empty()) {
      EXPECT_EQ(tokenizer->encode(actual), c["expected_ids"].get<std::vector<int32_t>>());
    }
  }
}

// The Qwen3 fixtures record the names of their refused probes only, not their messages.
class HfRefusal : public ::testing::TestWithParam<Suite> {};

TEST_P(HfRefusal, WhatTransformersRefusedIsRefusedWithTheTemplatesMessage) {
  const Suite& s = GetParam();
  std::optional<ChatTemplate> chat = ChatTemplate::from_tokenizer_folder(kSource / "third_party" / s.tokenizer);
  ASSERT_TRUE(chat.has_value());
  Json manifest = read_json(kSource / "tests/fixtures" / s.manifest);
  for (const auto& r : manifest["refused"]) {
    SCOPED_TRACE(std::string(s.name) + " case " + r["name"].get<std::string>());
    // Transformers' TemplateError text follows "TemplateError: ".
    std::string error = r["error"].get<std::string>();
    std::string message = error.substr(error.find(": ") + 2);
    try {
      std::string text = chat->render(r["messages"], r["tools"], options_of(r));
      ADD_FAILURE() << "rendered instead of refusing: " << text;
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), ::testing::HasSubstr(message));
      EXPECT_THAT(e.what(), ::testing::ContainsRegex("line [0-9]+, column [0-9]+"));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Templates, HfFixture, ::testing::ValuesIn(kSuites),
                         [](const auto& info) { return std::string(info.param.name); });
INSTANTIATE_TEST_SUITE_P(Templates, HfRefusal, ::testing::ValuesIn(kSuites + 1, std::end(kSuites)),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace paceline
