// Rotary embedding: HF's inverse frequencies, the llama3 rescaling bands, and the rotation.
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
