// Rotary embedding: HF's inverse frequencies, the llama3 and YaRN rescaling, YaRN's attention
// factor, and the rotation. (yarn_parity_test checks YaRN against transformers' own numbers.)
#include "exec/cpu/rope.h"

#include <cmath>
#include <numbers>
#include <vector>

#include <gtest/gtest.h>

namespace paceline {
namespace {

TEST(RopeInvFreq, IsThetaToTheMinusTwoIOverHeadDim) {
  std::vector<float> f = rope_inv_freq(128, 1000000.0, std::nullopt);
  ASSERT_EQ(f.size(), 64u);
  for (size_t i = 0; i < f.size(); ++i) {
    EXPECT_NEAR(f[i], std::pow(1000000.0, -2.0 * static_cast<double>(i) / 128), 1e-6 * f[i]);
  }
}

TEST(RopeInvFreq, Llama3KeepsHighDividesLowAndBlendsTheBand) {
  // Llama 3.1's published rope_scaling.
  RopeScaling s{8.0, 1.0, 4.0, 8192};
  std::vector<float> base = rope_inv_freq(128, 500000.0, std::nullopt);
  std::vector<float> scaled = rope_inv_freq(128, 500000.0, s);
  int kept = 0, divided = 0, blended = 0;
  for (size_t i = 0; i < base.size(); ++i) {
    double wavelen = 2 * std::numbers::pi / base[i];
    if (wavelen < 8192.0 / 4.0) {
      EXPECT_EQ(scaled[i], base[i]) << i;
      ++kept;
    } else if (wavelen > 8192.0 / 1.0) {
      EXPECT_FLOAT_EQ(scaled[i], base[i] / 8.0f) << i;
      ++divided;
    } else {
      EXPECT_LT(scaled[i], base[i]) << i;
      EXPECT_GT(scaled[i], base[i] / 8.0f) << i;
      double smooth = (8192.0 / wavelen - 1.0) / (4.0 - 1.0);
      EXPECT_NEAR(scaled[i], (1 - smooth) * base[i] / 8.0 + smooth * base[i], 1e-6 * base[i]);
      ++blended;
    }
  }
  EXPECT_GT(kept, 0);
  EXPECT_GT(divided, 0);
  EXPECT_GT(blended, 0);
}

RopeScaling yarn(double factor, int64_t original) {
  RopeScaling s;
  s.type = RopeType::kYarn;
  s.factor = factor;
  s.original_max_position_embeddings = original;
  return s;
}

TEST(RopeInvFreq, YarnForQwen3KeepsFastDimsDividesSlowOnesAndRampsBetween) {
  // Qwen3's model card: factor 4 over 32768. Dimension d turns 32768 / (2 pi theta^(2d/128))
  // times over the original context: 32 turns (beta_fast) at d = 23.6, one turn (beta_slow) at
  // d = 39.6, so the ramp runs from floor 23 to ceil 40.
  std::vector<float> base = rope_inv_freq(128, 1e6, std::nullopt);
  std::vector<float> scaled = rope_inv_freq(128, 1e6, yarn(4.0, 32768));
  ASSERT_EQ(scaled.size(), 64u);
  for (size_t i = 0; i < 64; ++i) {
    if (i <= 23) {
      EXPECT_EQ(scaled[i], base[i]) << i;
    } else if (i >= 40) {
      EXPECT_EQ(scaled[i], base[i] / 4.0f) << i;
    } else {
      double keep = 1.0 - (static_cast<double>(i) - 23.0) / 17.0;
      EXPECT_NEAR(scaled[i], base[i] / 4.0 * (1 - keep) + base[i] * keep, 1e-6 * base[i]) << i;
      EXPECT_LT(scaled[i], base[i]) << i;
      EXPECT_GT(scaled[i], base[i] / 4.0f) << i;
    }
  }
}

TEST(RopeInvFreq, YarnBetasAndTruncateMoveTheRamp) {
  // head_dim 32, theta 1e6, original 64 (the tiny fixture): 32 turns at d = -1.33, one at d = 2.69.
  // Truncated: ramp from 0 to 3 (d = 0 kept, 1 and 2 blended, 3.. divided).
  std::vector<float> base = rope_inv_freq(32, 1e6, std::nullopt);
  std::vector<float> f = rope_inv_freq(32, 1e6, yarn(4.0, 64));
  EXPECT_EQ(f[0], base[0]);
  EXPECT_NEAR(f[1], base[1] * (2.0 / 3 + 1.0 / 12), 1e-6 * base[1]);
  EXPECT_NEAR(f[2], base[2] * (1.0 / 3 + 2.0 / 12), 1e-6 * base[2]);
  for (size_t i = 3; i < 16; ++i) EXPECT_EQ(f[i], base[i] / 4.0f) << i;
  // Not truncated: the ramp runs from 0 to 2.688 exactly.
  RopeScaling exact = yarn(4.0, 64);
  exact.truncate = false;
  double high = 32 * std::log(64 / (2 * std::numbers::pi)) / (2 * std::log(1e6));
  std::vector<float> g = rope_inv_freq(32, 1e6, exact);
  for (size_t i = 1; i < 3; ++i) {
    double keep = 1.0 - static_cast<double>(i) / high;
    EXPECT_NEAR(g[i], base[i] * (keep + (1 - keep) / 4), 1e-6 * base[i]) << i;
  }
  EXPECT_EQ(g[3], base[3] / 4.0f);
  // beta_slow 0.25 (a quarter turn) pushes the ramp's end to ceil(4.29) = 5.
  RopeScaling slow = yarn(4.0, 64);
  slow.beta_slow = 0.25;
  std::vector<float> h = rope_inv_freq(32, 1e6, slow);
  EXPECT_GT(h[4], base[4] / 4.0f);
  EXPECT_EQ(h[5], base[5] / 4.0f);
}

TEST(RopeInvFreq, YarnWithFactorOneIsPlainRope) {
  EXPECT_EQ(rope_inv_freq(128, 1e6, yarn(1.0, 32768)), rope_inv_freq(128, 1e6, std::nullopt));
}

TEST(RopeAttentionFactor, IsOneTenthLnFactorPlusOneUnlessTheConfigSaysOtherwise) {
  EXPECT_EQ(rope_attention_factor(std::nullopt), 1.0);
  EXPECT_EQ(rope_attention_factor(RopeScaling{8.0, 1.0, 4.0, 8192}), 1.0);  // llama3
  EXPECT_DOUBLE_EQ(rope_attention_factor(yarn(4.0, 32768)), 0.1 * std::log(4.0) + 1.0);
  EXPECT_NEAR(rope_attention_factor(yarn(4.0, 32768)), 1.138629, 1e-6);
  EXPECT_EQ(rope_attention_factor(yarn(1.0, 32768)), 1.0);
  RopeScaling s = yarn(40.0, 4096);  // DeepSeek-V3's mscale = mscale_all_dim: the ratio is 1
  s.mscale = 1.0;
  s.mscale_all_dim = 1.0;
  EXPECT_DOUBLE_EQ(rope_attention_factor(s), 1.0);
  s.mscale_all_dim = 0.5;
  EXPECT_DOUBLE_EQ(rope_attention_factor(s),
                   (0.1 * std::log(40.0) + 1) / (0.05 * std::log(40.0) + 1));
  s.mscale_all_dim = std::nullopt;  // one of the two alone: the default
  EXPECT_DOUBLE_EQ(rope_attention_factor(s), 0.1 * std::log(40.0) + 1);
  s.mscale_all_dim = 1.0;
  s.attention_factor = 1.25;  // given outright: it wins over mscale
  EXPECT_EQ(rope_attention_factor(s), 1.25);
}

TEST(RotaryEmbedding, YarnScalesCosAndSinByTheAttentionFactor) {
  RotaryEmbedding plain(32, 1e6, std::nullopt);
  RotaryEmbedding scaled(32, 1e6, yarn(4.0, 64));
  const auto factor = static_cast<float>(0.1 * std::log(4.0) + 1.0);
  EXPECT_EQ(plain.attention_factor(), 1.0f);
  EXPECT_EQ(scaled.attention_factor(), factor);
  std::vector<float> cs(32);
  scaled.cos_sin(0, cs.data());
  for (size_t i = 0; i < 16; ++i) {
    EXPECT_EQ(cs[i], factor) << i;
    EXPECT_EQ(cs[16 + i], 0.0f) << i;
  }
  scaled.cos_sin(200, cs.data());
  for (size_t i = 0; i < 16; ++i) {
    float angle = scaled.inv_freq()[i] * 200.0f;
    EXPECT_EQ(cs[i], std::cos(angle) * factor) << i;
    EXPECT_EQ(cs[16 + i], std::sin(angle) * factor) << i;
  }
}

TEST(RotaryEmbedding, PositionZeroIsIdentityAndRotationKeepsTheNorm) {
  RotaryEmbedding rope(8, 10000.0, std::nullopt);
  std::vector<float> head = {1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<float> cs(8);
  rope.cos_sin(0, cs.data());
  std::vector<float> x = head;
  rope.rotate(x.data(), 1, cs.data());
  EXPECT_EQ(x, head);

  rope.cos_sin(37, cs.data());
  rope.rotate(x.data(), 1, cs.data());
  double before = 0, after = 0;
  for (size_t i = 0; i < 8; ++i) before += head[i] * head[i], after += x[i] * x[i];
  EXPECT_NEAR(after, before, 1e-4);
  EXPECT_NE(x, head);
}

TEST(RotaryEmbedding, PairsElementIWithIPlusHalf) {
  // Rotate-half: at inv_freq[0] = 1, position 1 turns (x0, x4) by one radian.
  RotaryEmbedding rope(8, 10000.0, std::nullopt);
  std::vector<float> cs(8);
  rope.cos_sin(1, cs.data());
  std::vector<float> x = {1, 0, 0, 0, 0, 0, 0, 0};
  rope.rotate(x.data(), 1, cs.data());
  EXPECT_FLOAT_EQ(x[0], std::cos(1.0f));
  EXPECT_FLOAT_EQ(x[4], std::sin(1.0f));
  EXPECT_EQ(x[1], 0.0f);
}

TEST(RotaryEmbedding, ScoresDependOnlyOnRelativePosition) {
  RotaryEmbedding rope(16, 10000.0, std::nullopt);
  std::vector<float> q0(16), k0(16);
  for (int i = 0; i < 16; ++i) q0[i] = std::sin(i + 1.0f), k0[i] = std::cos(2.0f * i);
  auto score = [&](int64_t pq, int64_t pk) {
    std::vector<float> q = q0, k = k0, cs(16);
    rope.cos_sin(pq, cs.data());
    rope.rotate(q.data(), 1, cs.data());
    rope.cos_sin(pk, cs.data());
    rope.rotate(k.data(), 1, cs.data());
    double s = 0;
    for (int i = 0; i < 16; ++i) s += q[i] * k[i];
    return s;
  };
  EXPECT_NEAR(score(10, 3), score(107, 100), 1e-3);
}

}  // namespace
}  // namespace paceline
