// Logprobs through the real binary against Hugging Face: `paceline serve` on the tiny random
// fixture checkpoints (tests/fixtures/models) answers a greedy completion over a fixture prompt
// with logprobs equal to log_softmax of Transformers' logits at that position
// (reference.safetensors), for the chosen token and the top 5.
//
// The fixtures' 512-token vocabulary fits no shipped tokenizer, so each test folder gets a
// byte-level one of exactly 512 ids: three specials, the 256 bytes, and 253 two-letter merges,
// every id with a text of its own.
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "../model_serve/model_folder.h"
#include "model/byte_level.h"
#include "model/safetensors.h"
#include "model/utf8.h"
#include "server_process.h"

namespace paceline::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr int kVocab = 512;
constexpr double kTolerance = 1e-3;

std::string byte_char(int byte) {
  std::string out;
  utf8_append(byte_level_char(static_cast<uint8_t>(byte)), out);
  return out;
}

// A tokenizer.json whose ids 0-2 are specials, 3-258 the bytes, 259-511 merges "aa", "ab", ...
std::string tiny_tokenizer_json(std::vector<std::string>& texts) {
  texts.assign(kVocab, "");
  json added = json::array();
  const char* specials[] = {"<pad>", "<s>", "</s>"};
  for (int id = 0; id < 3; ++id) {
    added.push_back({{"id", id}, {"content", specials[id]}, {"single_word", false},
                     {"lstrip", false}, {"rstrip", false}, {"normalized", false},
                     {"special", true}});
    texts[static_cast<size_t>(id)] = specials[id];
  }
  json vocab = json::object();
  for (int b = 0; b < 256; ++b) {
    vocab[byte_char(b)] = 3 + b;
    texts[static_cast<size_t>(3 + b)] = std::string(1, static_cast<char>(b));
  }
  json merges = json::array();
  for (int k = 0; 259 + k < kVocab; ++k) {
    const int left = 'a' + k / 26, right = 'a' + k % 26;
    vocab[byte_char(left) + byte_char(right)] = 259 + k;
    merges.push_back(byte_char(left) + " " + byte_char(right));
    texts[static_cast<size_t>(259 + k)] = std::string{static_cast<char>(left), static_cast<char>(right)};
  }
  json tokenizer = {
      {"version", "1.0"},
      {"added_tokens", added},
      {"normalizer", nullptr},
      {"pre_tokenizer",
       {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true},
        {"use_regex", true}}},
      {"post_processor", nullptr},
      {"decoder",
       {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true},
        {"use_regex", true}}},
      {"model",
       {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr},
        {"continuing_subword_prefix", nullptr}, {"end_of_word_suffix", nullptr},
        {"fuse_unk", false}, {"byte_fallback", false}, {"vocab", vocab}, {"merges", merges}}}};
  return tokenizer.dump();
}

// A token's text as JSON carries it: a byte that is no UTF-8 on its own reads as U+FFFD.
std::string shown(const std::string& text) { return utf8_is_valid(text) ? text : utf8_repair(text); }

std::vector<double> log_softmax(const float* logits) {
  double max = logits[0];
  for (int v = 1; v < kVocab; ++v) max = std::max(max, static_cast<double>(logits[v]));
  double sum = 0.0;
  for (int v = 0; v < kVocab; ++v) sum += std::exp(logits[v] - max);
  std::vector<double> out(kVocab);
  for (int v = 0; v < kVocab; ++v) out[static_cast<size_t>(v)] = logits[v] - max - std::log(sum);
  return out;
}

class ServeLogprobs : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    const fs::path fixture = kSourceDir / "tests/fixtures/models" / GetParam();
    folder_ = std::make_unique<ModelFolder>(std::string("logprobs-") + GetParam());
    for (const char* file : {"config.json", "generation_config.json", "model.safetensors"}) {
      fs::copy_file(fixture / file, folder_->path() / file);
    }
    folder_->write("tokenizer.json", tiny_tokenizer_json(texts_));
    reference_ = std::make_unique<SafetensorsFile>((fixture / "reference.safetensors").string());
    json root = read_json_file(fixture / "reference.json");
    for (const auto& p : root.at("prompts")) {
      const std::string name = p.at("name").get<std::string>();
      prompts_[name] = p.at("token_ids").get<std::vector<int32_t>>();
      positions_[name] = p.at("logit_positions").get<std::vector<size_t>>();
    }
    server_ = std::make_unique<ServerProcess>(
        std::vector<std::string>{"--max-model-len", "512"}, folder_->str());
  }

  // HF's log_softmax at the prompt's k-th logit position.
  std::vector<double> hf_logprobs(const std::string& name, size_t k) const {
    const TensorView* t = reference_->find("logits." + name);
    EXPECT_NE(t, nullptr);
    std::vector<float> all(static_cast<size_t>(t->numel()));
    t->to_f32(all.data());
    return log_softmax(all.data() + k * kVocab);
  }

  std::unique_ptr<ModelFolder> folder_;
  std::vector<std::string> texts_;
  std::unique_ptr<SafetensorsFile> reference_;
  std::map<std::string, std::vector<int32_t>> prompts_;
  std::map<std::string, std::vector<size_t>> positions_;  // where HF's logits were taken
  std::unique_ptr<ServerProcess> server_;
};

TEST_P(ServeLogprobs, GreedyCompletionLogprobsEqualLogSoftmaxOfHfLogits) {
  // Each prompt cut after its first, middle and last logit position: the completion's one
  // token is drawn from HF's logits there.
  std::vector<std::pair<std::string, size_t>> cases;  // prompt, index into its logit positions
  for (const auto& [name, positions] : positions_) {
    for (size_t k : std::set<size_t>{0, positions.size() / 2, positions.size() - 1}) {
      cases.push_back({name, k});
    }
  }
  for (const auto& [name, k] : cases) {
    const size_t position = positions_.at(name)[k];
    SCOPED_TRACE(name + " at " + std::to_string(position));
    const std::vector<int32_t>& ids = prompts_.at(name);
    const std::vector<int32_t> prompt(ids.begin(), ids.begin() + static_cast<long>(position) + 1);
    json body = {{"prompt", prompt}, {"max_tokens", 1}, {"temperature", 0}, {"logprobs", 5}};
    HttpReply r = http(server_->port(), "POST", "/v1/completions", body.dump());
    ASSERT_EQ(r.status, 200) << r.body;
    const json lp = json::parse(r.body)["choices"][0]["logprobs"];
    const std::vector<double> hf = hf_logprobs(name, k);
    const int best = static_cast<int>(std::max_element(hf.begin(), hf.end()) - hf.begin());

    ASSERT_EQ(lp["tokens"].size(), 1u);
    EXPECT_EQ(lp["tokens"][0], shown(texts_[static_cast<size_t>(best)])) << "the greedy token is HF's argmax";
    EXPECT_NEAR(lp["token_logprobs"][0].get<double>(), hf[static_cast<size_t>(best)], kTolerance);
    EXPECT_EQ(lp["text_offset"][0], 0);
    // The top 5 (the chosen token is the first of them): HF's 5 highest, with their values.
    std::vector<int> order(kVocab);
    for (int v = 0; v < kVocab; ++v) order[static_cast<size_t>(v)] = v;
    std::partial_sort(order.begin(), order.begin() + 5, order.end(), [&](int a, int b) {
      return hf[static_cast<size_t>(a)] > hf[static_cast<size_t>(b)];
    });
    // Keyed by text: bytes that are no UTF-8 on their own all read as U+FFFD, and the first of
    // them (the most likely) keeps the key.
    const json& top = lp["top_logprobs"][0];
    std::map<std::string, int> expected;
    for (int k = 0; k < 5; ++k) {
      const int id = order[static_cast<size_t>(k)];
      expected.emplace(shown(texts_[static_cast<size_t>(id)]), id);
    }
    ASSERT_EQ(top.size(), expected.size()) << top.dump();
    for (const auto& [key, id] : expected) {
      ASSERT_TRUE(top.contains(key)) << "HF's token " << id << " in " << top.dump();
      EXPECT_NEAR(top[key].get<double>(), hf[static_cast<size_t>(id)], kTolerance);
    }
  }
}

TEST_P(ServeLogprobs, EchoedPromptLogprobsEqualLogSoftmaxOfHfLogitsEvenWhenThePromptIsCached) {
  // Prompts whose logits HF took at every position; each sent twice: the second time its
  // blocks are in the prefix cache, which a request for prompt logprobs must not use.
  for (const char* name : {"len7", "len16", "len17"}) {
    const std::vector<int32_t>& ids = prompts_.at(name);
    const std::vector<size_t>& positions = positions_.at(name);
    if (positions.size() != ids.size()) continue;  // only prompts with every position
    for (int round = 0; round < 2; ++round) {
      SCOPED_TRACE(std::string(name) + ", round " + std::to_string(round));
      json body = {{"prompt", ids}, {"max_tokens", 1}, {"temperature", 0}, {"logprobs", 2},
                   {"echo", true}};
      HttpReply r = http(server_->port(), "POST", "/v1/completions", body.dump());
      ASSERT_EQ(r.status, 200) << r.body;
      const json lp = json::parse(r.body)["choices"][0]["logprobs"];
      ASSERT_EQ(lp["token_logprobs"].size(), ids.size() + 1) << "the prompt, then the token";
      EXPECT_TRUE(lp["token_logprobs"][0].is_null());
      for (size_t i = 1; i < ids.size(); ++i) {
        const std::vector<double> hf = hf_logprobs(name, i - 1);
        EXPECT_EQ(lp["tokens"][i], shown(texts_[static_cast<size_t>(ids[i])])) << "token " << i;
        EXPECT_NEAR(lp["token_logprobs"][i].get<double>(), hf[static_cast<size_t>(ids[i])],
                    kTolerance)
            << "prompt token " << i;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ServeLogprobs,
                         ::testing::Values("qwen3-tiny-random", "llama-tiny-random"));

}  // namespace
}  // namespace paceline::testing
