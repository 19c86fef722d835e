// Every case of tests/fixtures/chat_template/cases.json (rendered by Hugging Face transformers'
// apply_chat_template with the Qwen3 tokenizer) must render byte for byte the same here.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "model/chat_template.h"

namespace paceline {
namespace {

const std::filesystem::path kCases =
    std::filesystem::path(PACELINE_SOURCE_DIR) / "tests/fixtures/chat_template/cases.json";

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

TEST(HfFixture, EveryCaseRendersByteForByte) {
  if (!std::filesystem::exists(kCases)) GTEST_SKIP() << "no fixture file yet: " << kCases;
  std::ifstream in(kCases);
  auto cases = nlohmann::ordered_json::parse(in);
  ASSERT_TRUE(cases.is_array());
  EXPECT_GE(cases.size(), 30u) << "the fixture file should hold at least 30 cases";
  for (const auto& c : cases) {
    std::string name = c.value("name", std::string("(unnamed)"));
    SCOPED_TRACE("case " + name);
    ChatTemplateOptions options;
    options.add_generation_prompt = c.value("add_generation_prompt", true);
    if (c.contains("enable_thinking") && !c["enable_thinking"].is_null()) {
      options.enable_thinking = c["enable_thinking"].get<bool>();
    }
    nlohmann::ordered_json tools = c.contains("tools") ? c["tools"] : nlohmann::ordered_json();
    ASSERT_TRUE(c.contains("expected") && c["expected"].is_string()) << "no expected text";
    std::string actual;
    try {
      actual = render_qwen3_chat(c["messages"], tools, options);
    } catch (const Error& e) {
      ADD_FAILURE() << "threw: " << e.what();
      continue;
    }
    std::string diff = first_difference(c["expected"].get<std::string>(), actual);
    EXPECT_TRUE(diff.empty()) << diff;
  }
}

}  // namespace
}  // namespace paceline
