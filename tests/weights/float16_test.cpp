// f16 and bf16 conversions: exact for every 16-bit pattern, round-to-nearest-even back.
#include "model/float16.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "model/weights.h"

namespace paceline {
namespace {

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

float float_of(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// f16 decoded by the textbook formula, in double.
double f16_reference(uint16_t h) {
  int sign = (h & 0x8000) ? -1 : 1;
  int exponent = (h >> 10) & 0x1f;
  int mantissa = h & 0x3ff;
  if (exponent == 0) return sign * std::ldexp(mantissa, -24);
  if (exponent == 31) {
    return mantissa ? std::numeric_limits<double>::quiet_NaN()
                    : sign * std::numeric_limits<double>::infinity();
  }
  return sign * std::ldexp(1024 + mantissa, exponent - 25);
}

TEST(Float16, KnownBitsDecode) {
  EXPECT_EQ(f16_to_f32(0x3c00), 1.0f);
  EXPECT_EQ(f16_to_f32(0xc000), -2.0f);
  EXPECT_EQ(f16_to_f32(0x7bff), 65504.0f);               // largest finite
  EXPECT_EQ(f16_to_f32(0x0400), std::ldexp(1.0f, -14));  // smallest normal
  EXPECT_EQ(f16_to_f32(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(f16_to_f32(0x03ff), std::ldexp(1023.0f, -24));
  EXPECT_EQ(f16_to_f32(0x7c00), std::numeric_limits<float>::infinity());
  EXPECT_EQ(f16_to_f32(0xfc00), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(f16_to_f32(0x7e00)));
  EXPECT_TRUE(std::isnan(f16_to_f32(0x7c01)));          // signalling NaN stays NaN
  EXPECT_EQ(bits_of(f16_to_f32(0x8000)), 0x80000000u);  // -0
}

TEST(Float16, EveryPatternDecodesExactlyAndRoundTrips) {
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    auto bits = static_cast<uint16_t>(h);
    float f = f16_to_f32(bits);
    double expected = f16_reference(bits);
    if (std::isnan(expected)) {
      EXPECT_TRUE(std::isnan(f)) << h;
      EXPECT_TRUE(std::isnan(f16_to_f32(f32_to_f16(f)))) << h;
      continue;
    }
    ASSERT_EQ(static_cast<double>(f), expected) << h;
    ASSERT_EQ(f32_to_f16(f), bits) << h;
  }
}

TEST(Float16, RoundsToNearestEven) {
  // Between 1 and the next f16 (1 + 2^-10): below, at and above the midpoint.
  EXPECT_EQ(f32_to_f16(1.0f + std::ldexp(1.0f, -12)), 0x3c00);
  EXPECT_EQ(f32_to_f16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);      // tie: to even (1.0)
  EXPECT_EQ(f32_to_f16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);  // tie: to even (up)
  EXPECT_EQ(f32_to_f16(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)), 0x3c01);
  // Overflow: 65519 rounds down to 65504, 65520 (the tie) up to infinity.
  EXPECT_EQ(f32_to_f16(65519.0f), 0x7bff);
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7c00);
  EXPECT_EQ(f32_to_f16(1e10f), 0x7c00);
  EXPECT_EQ(f32_to_f16(-1e10f), 0xfc00);
  // Subnormals: 2^-25 is a tie between 0 and 2^-24 and goes to 0; just above goes up.
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -25)), 0x0000);
  EXPECT_EQ(f32_to_f16(std::nextafter(std::ldexp(1.0f, -25), 1.0f)), 0x0001);
  EXPECT_EQ(f32_to_f16(std::ldexp(3.0f, -25)), 0x0002);  // 1.5 units: tie to even
  EXPECT_EQ(f32_to_f16(-std::ldexp(1.0f, -30)), 0x8000);
  EXPECT_EQ(f32_to_f16(std::ldexp(1023.5f, -24)), 0x0400);  // rounds up into the normals
}

TEST(Float16, RandomFloatsRoundToTheNearestF16) {
  uint32_t state = 12345;
  for (int i = 0; i < 200000; ++i) {
    state = state * 1664525u + 1013904223u;
    float f = float_of((state & 0x8fffffffu) | 0x30000000u);  // magnitudes 2^-31 .. 2^1
    if (!std::isfinite(f)) continue;
    uint16_t h = f32_to_f16(f);
    double got = f16_reference(h);
    if (std::isinf(got)) {
      ASSERT_GE(std::fabs(f), 65520.0f) << f;
      continue;
    }
    // No f16 neighbour is closer.
    double error = std::fabs(got - f);
    for (int step : {-1, 1}) {
      uint16_t other = static_cast<uint16_t>(h + step);
      if ((other & 0x7fff) >= 0x7c00 || ((h & 0x7fff) == 0 && step < 0)) continue;
      ASSERT_LE(error, std::fabs(f16_reference(other) - f)) << f;
    }
  }
}

TEST(BFloat16, DecodesByShiftingAndRoundsToNearestEven) {
  EXPECT_EQ(bf16_to_f32(0x3f80), 1.0f);
  EXPECT_EQ(bf16_to_f32(0xc040), -3.0f);
  EXPECT_EQ(bf16_to_f32(0x0001), std::ldexp(1.0f, -133));  // subnormal
  EXPECT_EQ(bf16_to_f32(0x7f80), std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(bf16_to_f32(0x7fc0)));
  EXPECT_TRUE(std::isnan(bf16_to_f32(0x7f81)));

  EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(f32_to_bf16(float_of(0x3f808000)), 0x3f80);  // tie: to even
  EXPECT_EQ(f32_to_bf16(float_of(0x3f818000)), 0x3f82);  // tie: to even (up)
  EXPECT_EQ(f32_to_bf16(float_of(0x3f808001)), 0x3f81);
  EXPECT_EQ(f32_to_bf16(float_of(0x7f7fffff)), 0x7f80);  // max float rounds to inf
  EXPECT_EQ(f32_to_bf16(std::numeric_limits<float>::infinity()), 0x7f80);
  EXPECT_EQ(f32_to_bf16(float_of(0x00008000)), 0x0000);  // subnormal tie: to even
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(float_of(0x7f800001)))));  // low-payload NaN
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    float f = bf16_to_f32(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    ASSERT_EQ(f32_to_bf16(f), h) << h;
  }
}

TEST(TensorView, ConvertsEachDtypeToFloat) {
  const uint16_t bf16[] = {0x3f80, 0xc040, 0x0001, 0x7f80};
  const uint16_t f16[] = {0x3c00, 0xc000, 0x0001, 0xfc00};
  const float f32[] = {1.0f, -3.5f, 1e-40f, 7.0f};
  for (auto [dtype, data] : {std::pair{DType::kBF16, static_cast<const void*>(bf16)},
                             std::pair{DType::kF16, static_cast<const void*>(f16)},
                             std::pair{DType::kF32, static_cast<const void*>(f32)}}) {
    TensorView view{dtype, {2, 2}, data};
    EXPECT_EQ(view.numel(), 4);
    EXPECT_EQ(view.nbytes(), 4 * dtype_size(dtype));
    float out[4];
    view.to_f32(out);
    for (int i = 0; i < 4; ++i)
      EXPECT_EQ(bits_of(out[i]), bits_of(view.at(i))) << dtype_name(dtype);
  }
  EXPECT_EQ((TensorView{DType::kBF16, {4}, bf16}).at(1), -3.0f);
  EXPECT_EQ((TensorView{DType::kF16, {4}, f16}).at(3), -std::numeric_limits<float>::infinity());
  EXPECT_EQ((TensorView{DType::kF32, {4}, f32}).at(2), 1e-40f);
}

}  // namespace
}  // namespace paceline
