// make_dummy_weights: every expected tensor, deterministic bits from (seed, name, index), values
// in documented ranges, generated lazily and fast.
#include "model/dummy_weights.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>

#include "base/error.h"
#include "model/config.h"
#include "model/float16.h"
#include "model/weights.h"

namespace paceline {
namespace {

bool same_bits(const TensorView& a, const TensorView& b) {
  return a.dtype == b.dtype && a.shape == b.shape &&
         std::memcmp(a.data, b.data, static_cast<size_t>(a.nbytes())) == 0;
}

TEST(DummyWeights, HaveEveryExpectedTensorInTheRequestedDtype) {
  for (const char* name : {"qwen3-tiny", "llama-3.1-8b"}) {
    ModelConfig config = model_config_load(name);
    auto weights = make_dummy_weights(config, 1, DType::kF16);
    for (const ExpectedTensor& e : expected_tensors(config)) {
      ASSERT_TRUE(weights->has(e.name)) << e.name;
    }
    EXPECT_FALSE(weights->has("lm_head.weight") && config.tie_word_embeddings);
    if (config.num_parameters() < 100'000'000) {
      for (const ExpectedTensor& e : expected_tensors(config)) {
        const TensorView& view = weights->get(e.name);
        EXPECT_EQ(view.shape, e.shape) << e.name;
        EXPECT_EQ(view.dtype, DType::kF16) << e.name;
        EXPECT_NE(view.data, nullptr) << e.name;
      }
    }
  }
}

TEST(DummyWeights, SameSeedSameBitsOtherSeedOtherBits) {
  ModelConfig config = model_config_load("tiny");
  auto a = make_dummy_weights(config, 42);
  auto b = make_dummy_weights(config, 42);
  auto c = make_dummy_weights(config, 43);
  for (const ExpectedTensor& e : expected_tensors(config)) {
    EXPECT_TRUE(same_bits(a->get(e.name), b->get(e.name))) << e.name;
    EXPECT_FALSE(same_bits(a->get(e.name), c->get(e.name))) << e.name;
  }
  // Tensors of the same shape still differ: the name is part of the key.
  EXPECT_FALSE(same_bits(a->get("model.layers.0.mlp.up_proj.weight"),
                         a->get("model.layers.0.mlp.gate_proj.weight")));
}

TEST(DummyWeights, EachElementIsAPureFunctionOfSeedNameAndIndex) {
  ModelConfig config = model_config_load("tiny");
  auto f32 = make_dummy_weights(config, 5, DType::kF32);
  auto bf16 = make_dummy_weights(config, 5, DType::kBF16);
  const std::string name = "model.embed_tokens.weight";  // big enough to be split over threads
  const TensorView& exact = f32->get(name);
  const TensorView& rounded = bf16->get(name);
  DummyInit init = dummy_init(name, exact.shape, 5);
  for (int64_t i = 0; i < exact.numel(); i += 9973) {
    float value = dummy_value(init, static_cast<uint64_t>(i));
    ASSERT_EQ(exact.at(i), value) << i;
    ASSERT_EQ(rounded.at(i), bf16_to_f32(f32_to_bf16(value))) << i;
  }
}

TEST(DummyWeights, BitsAreFixedAcrossMachinesAndVersions) {
  // FNV-1a reference vectors.
  EXPECT_EQ(fnv1a64(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(fnv1a64("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(fnv1a64("foobar"), 0x85944171f73967e8ull);
  // Golden values: change them only on purpose, since checked-in results depend on them.
  DummyInit norm = dummy_init("model.norm.weight", {128}, 0);
  DummyInit proj = dummy_init("model.layers.0.self_attn.q_proj.weight", {128, 128}, 0);
  uint32_t bits[2];
  float values[2] = {dummy_value(norm, 0), dummy_value(proj, 1000)};
  std::memcpy(bits, values, sizeof bits);
  EXPECT_EQ(bits[0], 0x3f75db35u) << std::hex << bits[0];
  EXPECT_EQ(bits[1], 0xbd843ce3u) << std::hex << bits[1];
}

TEST(DummyWeights, ValuesStayInTheirDocumentedRanges) {
  ModelConfig config = model_config_load("tiny");
  auto weights = make_dummy_weights(config, 3, DType::kF32);
  auto stats = [&](const std::string& name, double* lo, double* hi, double* mean, double* std) {
    const TensorView& view = weights->get(name);
    std::vector<float> v(static_cast<size_t>(view.numel()));
    view.to_f32(v.data());
    double sum = 0, sq = 0;
    *lo = 1e9;
    *hi = -1e9;
    for (float x : v) {
      *lo = std::min<double>(*lo, x);
      *hi = std::max<double>(*hi, x);
      sum += x;
      sq += static_cast<double>(x) * x;
    }
    *mean = sum / static_cast<double>(v.size());
    *std = std::sqrt(sq / static_cast<double>(v.size()) - *mean * *mean);
  };
  double lo, hi, mean, std;
  stats("model.layers.0.input_layernorm.weight", &lo, &hi, &mean, &std);
  EXPECT_GE(lo, 0.95);
  EXPECT_LE(hi, 1.05);
  stats("model.layers.1.self_attn.q_norm.weight", &lo, &hi, &mean, &std);
  EXPECT_GE(lo, 0.95);
  EXPECT_LE(hi, 1.05);
  stats("model.embed_tokens.weight", &lo, &hi, &mean, &std);
  EXPECT_NEAR(std, 0.02, 0.0005);
  EXPECT_NEAR(mean, 0.0, 0.0005);
  stats("model.layers.2.mlp.down_proj.weight", &lo, &hi, &mean, &std);  // fan_in 384
  EXPECT_GE(lo, -1 / std::sqrt(384.0));
  EXPECT_LT(hi, 1 / std::sqrt(384.0));
  EXPECT_NEAR(std, 1 / std::sqrt(3 * 384.0), 0.002);
}

TEST(DummyWeights, TinyGeneratesWellUnderASecond) {
  ModelConfig config = model_config_load("tiny");
  auto start = std::chrono::steady_clock::now();
  auto weights = make_dummy_weights(config, 0);
  for (const ExpectedTensor& e : expected_tensors(config)) weights->get(e.name);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 1.0);
  std::printf("qwen3-tiny dummy weights (%.1fM params, bf16): %.3f s\n",
              static_cast<double>(config.num_parameters()) / 1e6, seconds);
}

TEST(DummyWeights, LargeModelsCostNothingUntilATensorIsAskedFor) {
  ModelConfig config = model_config_load("qwen3-32b");  // 65 GB in bf16: never materialised
  auto start = std::chrono::steady_clock::now();
  auto weights = make_dummy_weights(config, 0);
  EXPECT_TRUE(weights->has("model.layers.63.mlp.down_proj.weight"));
  const TensorView& norm = weights->get("model.layers.63.input_layernorm.weight");
  EXPECT_EQ(norm.shape, std::vector<int64_t>{5120});
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 1.0);
}

TEST(DummyWeights, UnknownTensorIsAnErrorNamingIt) {
  auto weights = make_dummy_weights(model_config_load("tiny"), 0);
  try {
    weights->get("lm_head.weight");  // tied: there is none
    FAIL() << "found";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'lm_head.weight'"), std::string::npos);
  }
}

}  // namespace
}  // namespace paceline
