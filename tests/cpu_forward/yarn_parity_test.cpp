// YaRN RoPE scaling against Hugging Face Transformers 5.17 (tools/fixtures/make_yarn_fixture.py):
// transformers' own inverse frequencies and attention factors for eleven rope configurations
// (Qwen3-8B's among them), the tiny random Qwen3 YaRN checkpoint's rope buffer, and its float32
// logits for prompts up to 256 tokens, four times the original context of 64, within 2e-5. The
// same checkpoint without YaRN, or without its attention factor, misses HF by far more.
// (hf_parity_test also runs this checkpoint: chunked prefill and greedy decode.)
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "exec/cpu/cpu_model.h"
#include "exec/cpu/rope.h"
#include "model/config.h"
#include "model/safetensors.h"
#include "model/weights.h"
#include "test_model.h"

namespace paceline {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::BlockPool;
using testing::make_seq;

const fs::path kFolder = fs::path(PACELINE_SOURCE_DIR) / "tests/fixtures/models/qwen3-yarn-tiny-random";
constexpr int64_t kBlockSize = 16;
// A few float32 roundings of the logit scale (|logit| < 10 here): HF's own float32 against its
// float64 differs by 3.9e-6 (reference.json: float32_vs_float64_max_abs_logit_diff).
constexpr float kTolerance = 2e-5f;

json read_json(const fs::path& path) {
  std::ifstream in(path);
  return json::parse(in);
}

// |a - b| / |b|, worst over the vector.
double worst_relative(std::span<const float> a, const std::vector<double>& b) {
  double worst = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    worst = std::max(worst, std::fabs(static_cast<double>(a[i]) - b[i]) / std::fabs(b[i]));
  }
  return worst;
}

TEST(YarnRope, FrequenciesAndAttentionFactorEqualTransformers) {
  if (!fs::exists(kFolder / "yarn_rope_cases.json")) GTEST_SKIP() << "no fixture at " << kFolder;
  json cases = read_json(kFolder / "yarn_rope_cases.json");
  int checked = 0;
  size_t identical = 0, frequencies = 0;
  double worst_freq = 0;
  for (const json& k : cases) {
    std::string name = k.at("name");
    SCOPED_TRACE(name);
    ASSERT_FALSE(k.contains("error")) << k.at("error");
    json rope = k.at("rope");
    json config = {{"model_type", "qwen3"},       {"vocab_size", 512},
                   {"hidden_size", 64},           {"intermediate_size", 128},
                   {"num_hidden_layers", 1},      {"num_attention_heads", 4},
                   {"num_key_value_heads", 2},    {"head_dim", k.at("head_dim")},
                   {"rope_theta", rope.at("rope_theta")},
                   {"max_position_embeddings", k.at("max_position_embeddings")}};
    rope.erase("rope_theta");
    config["rope_scaling"] = rope;
    ModelConfig c = model_config_from_json(config.dump(), name);
    ASSERT_TRUE(c.rope_scaling.has_value());
    std::vector<float> ours = rope_inv_freq(c.head_dim, c.rope_theta, c.rope_scaling);
    std::vector<double> hf = k.at("inv_freq").get<std::vector<double>>();
    ASSERT_EQ(ours.size(), hf.size());
    double e = worst_relative(ours, hf);
    worst_freq = std::max(worst_freq, e);
    for (size_t i = 0; i < hf.size(); ++i) identical += static_cast<double>(ours[i]) == hf[i];
    frequencies += hf.size();
    // One float32 rounding (theta's power in float32 may round the other way).
    EXPECT_LE(e, 1.2e-7);
    EXPECT_NEAR(rope_attention_factor(c.rope_scaling), k.at("attention_factor").get<double>(), 1e-15);
    ++checked;
  }
  EXPECT_EQ(checked, 11);
  std::cout << "[ yarn ] " << checked << " rope cases: " << identical << " of " << frequencies
            << " inverse frequencies bit-identical to HF's, worst relative error " << worst_freq
            << "\n";
}

class YarnFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(kFolder / "reference.json")) GTEST_SKIP() << "no fixture at " << kFolder;
    config_ = model_config_load(kFolder.string());
    weights_ = load_safetensors_weights(kFolder.string(), config_);
    reference_ = std::make_unique<SafetensorsFile>((kFolder / "reference.safetensors").string());
    root_ = read_json(kFolder / "reference.json");
  }

  // Max |logit - HF's| over every prompt's logit positions, all prompts in one ragged batch.
  float worst_vs_hf(const ModelConfig& config) const {
    int64_t positions = 0;
    for (const json& p : root_.at("prompts")) positions += p.at("token_ids").size();
    KvCacheShape cache{positions / kBlockSize + 16, kBlockSize};
    CpuModel model(config, *weights_, cache, 2);
    BlockPool pool(cache.num_blocks, 5);
    StepPlan plan;
    for (const json& p : root_.at("prompts")) {
      auto tokens = p.at("token_ids").get<std::vector<int32_t>>();
      auto n = static_cast<int64_t>(tokens.size());
      std::vector<int32_t> table;
      pool.cover(table, n, kBlockSize);
      plan.seqs.push_back(make_seq(plan.seqs.size(), tokens, 0, table, static_cast<int32_t>(n)));
    }
    std::vector<float> logits = model.forward(plan);
    const int64_t vocab = config.vocab_size;
    float worst = 0;
    int64_t row = 0;
    for (const json& p : root_.at("prompts")) {
      const TensorView* t = reference_->find("logits." + p.at("name").get<std::string>());
      EXPECT_NE(t, nullptr);
      if (t == nullptr) return INFINITY;
      std::vector<float> hf(static_cast<size_t>(t->numel()));
      t->to_f32(hf.data());
      auto at = p.at("logit_positions").get<std::vector<int64_t>>();
      for (size_t i = 0; i < at.size(); ++i) {
        for (int64_t v = 0; v < vocab; ++v) {
          worst = std::max(worst, std::fabs(logits[(row + at[i]) * vocab + v] - hf[i * vocab + v]));
        }
      }
      row += static_cast<int64_t>(p.at("token_ids").size());
    }
    return worst;
  }

  ModelConfig config_;
  std::unique_ptr<Weights> weights_;
  std::unique_ptr<SafetensorsFile> reference_;
  json root_;
};

TEST_F(YarnFixture, IsQwen3WithYarnAndPromptsFourTimesTheOriginalContext) {
  ASSERT_TRUE(config_.rope_scaling.has_value());
  EXPECT_EQ(config_.rope_scaling->type, RopeType::kYarn);
  EXPECT_EQ(config_.rope_scaling->factor, 4.0);
  EXPECT_EQ(config_.rope_scaling->original_max_position_embeddings, 64);
  EXPECT_TRUE(config_.qk_norm);
  // The file says 80, as Qwen3-8B's 40960 is 1.25 x 32768; YaRN serves 64 x 4.
  EXPECT_EQ(read_json(kFolder / "config.json").at("max_position_embeddings"), 80);
  EXPECT_EQ(config_.max_position_embeddings, 256);
  size_t longest = 0;
  for (const json& p : root_.at("prompts")) longest = std::max(longest, p.at("token_ids").size());
  EXPECT_EQ(longest, 256u);
}

TEST_F(YarnFixture, RopeEqualsTheCheckpointsRotaryBufferInTransformers) {
  RotaryEmbedding rope(config_.head_dim, config_.rope_theta, config_.rope_scaling);
  std::vector<double> hf = root_.at("rope").at("inv_freq").get<std::vector<double>>();
  ASSERT_EQ(rope.inv_freq().size(), hf.size());
  double e = worst_relative(rope.inv_freq(), hf);
  EXPECT_LE(e, 1.2e-7);
  EXPECT_EQ(rope.attention_factor(),
            static_cast<float>(root_.at("rope").at("attention_scaling").get<double>()));
  std::cout << "[ yarn ] fixture inv_freq worst relative error vs HF " << e
            << "; attention factor " << rope.attention_factor() << "\n";
}

TEST_F(YarnFixture, LogitsMatchTransformersAndMissItWithoutYarn) {
  float yarn = worst_vs_hf(config_);
  ModelConfig plain = config_;
  plain.rope_scaling.reset();
  float without = worst_vs_hf(plain);
  ModelConfig no_factor = config_;
  no_factor.rope_scaling->attention_factor = 1.0;
  float without_factor = worst_vs_hf(no_factor);
  std::cout << "[ yarn ] max |dlogit| vs HF over 8 prompts (1-256 tokens): " << yarn
            << "; without YaRN " << without << "; YaRN with attention factor 1 " << without_factor
            << "\n";
  EXPECT_LE(yarn, kTolerance);
  EXPECT_GT(without, 100 * kTolerance);
  EXPECT_GT(without_factor, 100 * kTolerance);
}

}  // namespace
}  // namespace paceline
