// Agreement with Hugging Face tokenizers 0.23 on the corners listed in make_stress_cases.py:
// every Unicode plane, white space and format characters, recent letters, case folding, digit
// runs and long words, for Qwen3 as shipped, with parse_special=false, and for a Llama-3-style
// variant (Llama-3's regex, ignore_merges, merges written as "a b").
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "qwen3_tokenizer.h"

namespace paceline::testing {
namespace {

using nlohmann::json;

constexpr const char* kLlama3Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The same edit make_stress_cases.py makes to Qwen3's tokenizer.json.
const Tokenizer& llama3_style() {
  static const Tokenizer tokenizer = [] {
    json spec = json::parse(read_file(qwen3_tokenizer_dir() + "/tokenizer.json"));
    spec["normalizer"] = nullptr;
    spec["pre_tokenizer"]["pretokenizers"][0]["pattern"] = {{"Regex", kLlama3Pattern}};
    spec["model"]["ignore_merges"] = true;
    json merges = json::array();
    for (const json& pair : spec["model"]["merges"]) {
      merges.push_back(pair[0].get<std::string>() + " " + pair[1].get<std::string>());
    }
    spec["model"]["merges"] = std::move(merges);
    return Tokenizer::from_json(spec.dump(), "llama3-style variant of Qwen3's tokenizer.json");
  }();
  return tokenizer;
}

std::string base64_decode(std::string_view text) {
  std::string out;
  uint32_t bits = 0;
  int count = 0;
  for (char c : text) {
    int v = -1;
    if (c >= 'A' && c <= 'Z') v = c - 'A';
    if (c >= 'a' && c <= 'z') v = c - 'a' + 26;
    if (c >= '0' && c <= '9') v = c - '0' + 52;
    if (c == '+') v = 62;
    if (c == '/') v = 63;
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

TEST(Stress, EncodeMatchesTokenizersOnUnicodeCorners) {
  std::ifstream in(std::string(PACELINE_SOURCE_DIR) + "/tests/tokenizer/stress_cases.jsonl");
  ASSERT_TRUE(in) << "tests/tokenizer/stress_cases.jsonl is missing";
  std::string line;
  int cases = 0, failures = 0;
  while (std::getline(in, line)) {
    const json row = json::parse(line);
    const std::string text = base64_decode(row.at("text_b64").get<std::string>());
    const std::pair<const char*, std::vector<int32_t>> variants[] = {
        {"qwen3", qwen3().encode(text)},
        {"qwen3_plain", qwen3().encode(text, /*parse_special=*/false)},
        {"llama3_style", llama3_style().encode(text)},
    };
    for (const auto& [variant, ids] : variants) {
      const auto expected = row.at(variant).get<std::vector<int32_t>>();
      ++cases;
      if (ids != expected && ++failures <= 10) {
        ADD_FAILURE() << variant << " " << json(text).dump()
                      << "\n  tokenizers: " << json(expected).dump()
                      << "\n  paceline:   " << json(ids).dump();
      }
    }
  }
  EXPECT_GT(cases, 8000);
  EXPECT_EQ(failures, 0) << "of " << cases << " cases";
}

}  // namespace
}  // namespace paceline::testing
