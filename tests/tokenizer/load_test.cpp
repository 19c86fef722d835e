// Loading tokenizer.json: the file forms Qwen3 and Llama-3 use, and clear errors for the rest.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "model/byte_level.h"
#include "model/tokenizer.h"
#include "model/utf8.h"
#include "qwen3_tokenizer.h"

namespace paceline::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Llama-3's split regex: up to three digits per piece.
constexpr const char* kLlama3Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// A small byte-level BPE tokenizer.json: the 256 byte tokens (ids 0-255 in byte order) plus
// "ab" (256), "abc" (257) and "bc" (258), with merges "a b" and "ab c" written as strings.
json tiny_tokenizer(bool ignore_merges) {
  json vocab = json::object();
  for (int b = 0; b < 256; ++b) {
    std::string text;
    utf8_append(byte_level_char(static_cast<uint8_t>(b)), text);
    vocab[text] = b;
  }
  vocab["ab"] = 256;
  vocab["abc"] = 257;
  vocab["bc"] = 258;
  return {
      {"version", "1.0"},
      {"added_tokens", json::array({{{"id", 259},
                                     {"content", "<eos>"},
                                     {"special", true},
                                     {"normalized", false},
                                     {"lstrip", false},
                                     {"rstrip", false},
                                     {"single_word", false}}})},
      {"normalizer", nullptr},
      {"pre_tokenizer",
       {{"type", "Sequence"},
        {"pretokenizers",
         json::array(
             {{{"type", "Split"},
               {"pattern", {{"Regex", kLlama3Pattern}}},
               {"behavior", "Isolated"},
               {"invert", false}},
              {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}})}}},
      {"decoder", {{"type", "ByteLevel"}}},
      {"model",
       {{"type", "BPE"},
        {"ignore_merges", ignore_merges},
        {"vocab", vocab},
        {"merges", json::array({"a b", "ab c"})}}},
  };
}

std::string error_of(const std::function<void()>& load) {
  try {
    load();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Load, AcceptsTheFileOrItsFolder) {
  const Tokenizer by_folder = Tokenizer::from_file(qwen3_tokenizer_dir());
  const Tokenizer by_file = Tokenizer::from_file(qwen3_tokenizer_dir() + "/tokenizer.json");
  EXPECT_EQ(by_folder.encode("hello world"), by_file.encode("hello world"));
}

TEST(Load, ReadsMergesWrittenAsStrings) {
  const Tokenizer tokenizer = Tokenizer::from_json(tiny_tokenizer(false).dump(), "tiny");
  EXPECT_EQ(tokenizer.encode("abc"), (std::vector<int32_t>{257}));
  EXPECT_EQ(tokenizer.encode("abcab<eos>"), (std::vector<int32_t>{257, 256, 259}));
  EXPECT_EQ(tokenizer.vocab_size(), 260);
}

TEST(Load, ReadsTheRegexFromTheFile) {
  const Tokenizer tokenizer = Tokenizer::from_json(tiny_tokenizer(false).dump(), "tiny");
  // Llama-3's \p{N}{1,3}: digits in threes (no merges here, so each piece shows as its bytes).
  EXPECT_EQ(tokenizer.encode("12345"), (std::vector<int32_t>{'1', '2', '3', '4', '5'}));
  EXPECT_EQ(tokenizer.decode(tokenizer.encode("12345 ab")), "12345 ab");
}

TEST(Load, IgnoreMergesTakesWholeWordsFromTheVocabulary) {
  // "bc" is in the vocabulary but no merge builds it.
  EXPECT_EQ(Tokenizer::from_json(tiny_tokenizer(false).dump(), "t").encode("bc"),
            (std::vector<int32_t>{'b', 'c'}));
  EXPECT_EQ(Tokenizer::from_json(tiny_tokenizer(true).dump(), "t").encode("bc"),
            (std::vector<int32_t>{258}));
}

TEST(Load, MissingFileIsNamed) {
  const std::string message = error_of([] { Tokenizer::from_file("no/such/tokenizer.json"); });
  EXPECT_NE(message.find("no/such/tokenizer.json"), std::string::npos) << message;
}

TEST(Load, FolderWithoutTokenizerJsonIsNamed) {
  const fs::path dir = fs::temp_directory_path() / "paceline_tokenizer_empty_dir";
  fs::create_directories(dir);
  const std::string message = error_of([&] { Tokenizer::from_file(dir.string()); });
  EXPECT_NE(message.find((dir / "tokenizer.json").string()), std::string::npos) << message;
}

TEST(Load, MalformedJsonIsNamed) {
  const fs::path path = fs::temp_directory_path() / "paceline_tokenizer_malformed.json";
  std::ofstream(path) << "{\"model\": {\"vocab\": ";
  const std::string message = error_of([&] { Tokenizer::from_file(path.string()); });
  EXPECT_NE(message.find(path.string()), std::string::npos) << message;
  EXPECT_NE(message.find("not valid JSON"), std::string::npos) << message;
}

TEST(Load, UnsupportedDesignsAreRefusedByName) {
  json unigram = tiny_tokenizer(false);
  unigram["model"]["type"] = "Unigram";
  EXPECT_NE(error_of([&] { Tokenizer::from_json(unigram.dump(), "u.json"); }).find("Unigram"),
            std::string::npos);
  json nfkc = tiny_tokenizer(false);
  nfkc["normalizer"] = {{"type", "NFKC"}};
  EXPECT_NE(error_of([&] { Tokenizer::from_json(nfkc.dump(), "n.json"); }).find("NFKC"),
            std::string::npos);
  json no_model = json::object();
  EXPECT_NE(error_of([&] { Tokenizer::from_json(no_model.dump(), "m.json"); }).find("m.json"),
            std::string::npos);
  json bad_merge = tiny_tokenizer(false);
  bad_merge["model"]["merges"] = json::array({"x yz"});
  const std::string message = error_of([&] { Tokenizer::from_json(bad_merge.dump(), "b.json"); });
  EXPECT_NE(message.find("b.json"), std::string::npos) << message;
  EXPECT_NE(message.find("x yz"), std::string::npos) << message;
}

}  // namespace
}  // namespace paceline::testing
