// Agreement with Hugging Face tokenizers on the cases in tests/fixtures/tokenizer/ (Qwen3) and
// tests/fixtures/tokenizer/llama3_1/ (Llama-3.1), made by tools/fixtures/ with the real
// `tokenizers` library and the same tokenizer.json files as third_party/ holds:
//   encode_cases.jsonl  {"category", "text_b64", "ids", "decoded"}: ids of
//                       encode(bytes.decode("utf-8", "replace"), add_special_tokens=False)
//   decode_cases.jsonl  {"ids", "text"}: decode(ids, skip_special_tokens=False)
// Every case must match exactly.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "qwen3_tokenizer.h"

namespace paceline::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr int kMaxReported = 10;

struct Suite {
  const char* name;
  const char* fixtures;   // under tests/fixtures/
  const char* tokenizer;  // under third_party/, fetched by scripts/setup
};

void PrintTo(const Suite& s, std::ostream* os) { *os << s.name; }

const Suite kSuites[] = {
    {"qwen3", "tokenizer", "qwen3-tokenizer"},
    {"llama3_1", "tokenizer/llama3_1", "llama3_1-tokenizer"},
};

class HfFixture : public ::testing::TestWithParam<Suite> {
 protected:
  fs::path fixture_dir() const { return fs::path(PACELINE_SOURCE_DIR) / "tests/fixtures" / GetParam().fixtures; }

  // Loaded once per suite: the Llama-3.1 tokenizer takes a second to read.
  const Tokenizer& tokenizer() const {
    static std::map<std::string, Tokenizer> loaded;
    const Suite& s = GetParam();
    auto it = loaded.find(s.name);
    if (it == loaded.end()) {
      const fs::path dir = fs::path(PACELINE_SOURCE_DIR) / "third_party" / s.tokenizer;
      it = loaded.emplace(s.name, Tokenizer::from_file(dir.string())).first;
    }
    return it->second;
  }
};

std::string base64_decode(std::string_view text) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+' || c == '-') return 62;
    if (c == '/' || c == '_') return 63;
    return -1;  // '=' padding and anything else
  };
  std::string out;
  uint32_t bits = 0;
  int count = 0;
  for (char c : text) {
    const int v = value(c);
    if (v < 0) continue;
    bits = (bits << 6) | static_cast<uint32_t>(v);
    count += 6;
    if (count >= 8) {
      count -= 8;
      out.push_back(static_cast<char>((bits >> count) & 0xFF));
    }
  }
  return out;
}

std::vector<json> read_jsonl(const fs::path& path) {
  std::ifstream in(path);
  std::vector<json> rows;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) rows.push_back(json::parse(line));
  }
  return rows;
}

// A string as a JSON literal, with invalid UTF-8 shown as U+FFFD, for failure messages.
std::string quoted(const std::string& s) {
  return json(s).dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string show(const std::vector<int32_t>& ids) {
  return json(ids).dump();
}

TEST_P(HfFixture, EncodeMatchesTokenizersExactly) {
  const fs::path path = fixture_dir() / "encode_cases.jsonl";
  if (!fs::exists(path)) FAIL() << path << " is missing (made by tools/fixtures/)";
  const std::vector<json> cases = read_jsonl(path);
  EXPECT_GE(cases.size(), 2000u) << "too few encode cases in " << path;
  int id_failures = 0, decode_failures = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const json& c = cases[i];
    const std::string category = c.value("category", "?");
    const std::string text = base64_decode(c.at("text_b64").get<std::string>());
    const auto expected = c.at("ids").get<std::vector<int32_t>>();
    const std::vector<int32_t> ids = tokenizer().encode(text);
    if (ids != expected && ++id_failures <= kMaxReported) {
      ADD_FAILURE() << "case " << i << " [" << category << "] " << quoted(text)
                    << "\n  tokenizers: " << show(expected) << "\n  paceline:   " << show(ids);
    }
    const std::string decoded = tokenizer().decode(ids);
    const std::string expected_decoded = c.at("decoded").get<std::string>();
    if (decoded != expected_decoded && ++decode_failures <= kMaxReported) {
      ADD_FAILURE() << "case " << i << " [" << category << "] " << quoted(text)
                    << "\n  decode, tokenizers: " << quoted(expected_decoded)
                    << "\n  decode, paceline:   " << quoted(decoded);
    }
  }
  EXPECT_EQ(id_failures, 0) << "of " << cases.size() << " encode cases";
  EXPECT_EQ(decode_failures, 0) << "of " << cases.size() << " encode cases (decode of encode)";
}

TEST_P(HfFixture, DecodeMatchesTokenizersExactly) {
  const fs::path path = fixture_dir() / "decode_cases.jsonl";
  if (!fs::exists(path)) FAIL() << path << " is missing (made by tools/fixtures/)";
  const std::vector<json> cases = read_jsonl(path);
  EXPECT_FALSE(cases.empty()) << path;
  int failures = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto ids = cases[i].at("ids").get<std::vector<int32_t>>();
    const std::string expected = cases[i].at("text").get<std::string>();
    const std::string text = tokenizer().decode(ids);
    if (text != expected && ++failures <= kMaxReported) {
      ADD_FAILURE() << "case " << i << " ids " << show(ids)
                    << "\n  tokenizers: " << quoted(expected) << "\n  paceline:   " << quoted(text);
    }
  }
  EXPECT_EQ(failures, 0) << "of " << cases.size() << " decode cases";
}

INSTANTIATE_TEST_SUITE_P(Tokenizers, HfFixture, ::testing::ValuesIn(kSuites),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace paceline::testing
