// The integer step of the kernels' e4m3 -> bf16 widening (kv_fp8.cuh), on the host for every pair
// of e4m3 bytes but NaN: the f16 pair the hardware conversion gives (its host version here),
// moved into bf16 bits, is the bf16 pair of the values times 2^-112, normal or zero, so that the
// kernels' multiplication by 2^112 is exact and gives every e4m3 value. Needs no GPU.
#include <cmath>
#include <cstdint>

#include <gtest/gtest.h>

#if PACELINE_HAVE_CUDA
#include <cuda_fp8.h>

#include "decode_test_util.h"
#include "exec/cuda/kv_fp8.cuh"

namespace paceline {
namespace {

TEST(CudaFp8Widen, EveryE4m3PairMovesIntoBf16ScaledBy2ToTheMinus112) {
  int checked = 0;
  for (int lo = 0; lo < 256; ++lo) {
    for (int hi = 0; hi < 256; ++hi) {
      if ((lo & 0x7f) == 0x7f || (hi & 0x7f) == 0x7f) continue;  // NaN
      const auto two = static_cast<__nv_fp8x2_storage_t>(lo | hi << 8);
      const __half2_raw h = __nv_cvt_fp8x2_to_halfraw2(two, __NV_E4M3);
      const uint32_t f16 = static_cast<uint32_t>(h.x) | static_cast<uint32_t>(h.y) << 16;
      const uint32_t bf16 = cuda::f16x2_to_bf16x2_scaled(f16);
      for (int half = 0; half < 2; ++half) {
        const auto bits = static_cast<uint16_t>(bf16 >> (16 * half));
        const double want = testing::e4m3_value(static_cast<uint8_t>(half == 0 ? lo : hi));
        const double got = std::ldexp(static_cast<double>(testing::bf16_value(bits)), 112);
        const int exponent = (bits >> 7) & 0xff;
        ASSERT_TRUE(got == want && std::signbit(got) == std::signbit(want))
            << "bytes " << lo << ", " << hi << " half " << half << ": " << got << " != " << want;
        ASSERT_TRUE(exponent > 0 || (bits & 0x7fff) == 0)
            << "bytes " << lo << ", " << hi << ": a subnormal bf16 (" << bits << ")";
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 2 * 254 * 254);
}

// The FP8 decode kernel's widening to f16 (kv_fp8.cuh, integer operations only): for every pair of
// e4m3 bytes but NaN, placed at elements (0, 2) and (1, 3) of four bytes whose other two bytes
// are anything, "even" and "odd" give the f16 pair of the two values times 2^-8 exactly (a
// subnormal e4m3 an f16 subnormal), and the two-byte form gives the pair in order.
float f16_value(uint16_t bits) {
  const int exponent = (bits >> 10) & 0x1f;
  const double mantissa = bits & 0x3ff;
  const double magnitude = exponent == 0 ? std::ldexp(mantissa, -24)
                                         : std::ldexp(1024.0 + mantissa, exponent - 25);
  return static_cast<float>((bits & 0x8000) != 0 ? -magnitude : magnitude);
}

TEST(CudaFp8Widen, EveryE4m3PairMovesIntoF16ScaledBy2ToTheMinus8) {
  const uint32_t junk[] = {0x00u, 0xffu, 0x80u, 0x7fu, 0x5au};
  int checked = 0;
  for (uint32_t lo = 0; lo < 256; ++lo) {
    for (uint32_t hi = 0; hi < 256; ++hi) {
      if ((lo & 0x7f) == 0x7f || (hi & 0x7f) == 0x7f) continue;  // NaN
      for (uint32_t j : junk) {
        const uint32_t other = (j * 0x9du + lo + hi) & 0xffu;
        const uint32_t words[3] = {
            cuda::e4m3x4_even_to_f16x2_scaled(lo | other << 8 | hi << 16 | j << 24),
            cuda::e4m3x4_odd_to_f16x2_scaled(other | lo << 8 | j << 16 | hi << 24),
            cuda::e4m3x2_to_f16x2_scaled(lo | hi << 8 | j << 16 | other << 24)};
        for (uint32_t w : words) {
          for (int half = 0; half < 2; ++half) {
            const auto bits = static_cast<uint16_t>(w >> (16 * half));
            const double want = testing::e4m3_value(static_cast<uint8_t>(half == 0 ? lo : hi));
            const double got = std::ldexp(static_cast<double>(f16_value(bits)), 8);
            ASSERT_TRUE(got == want && std::signbit(got) == std::signbit(want))
                << "bytes " << lo << ", " << hi << " (others " << other << ", " << j << ") half "
                << half << ": " << got << " != " << want;
            ++checked;
          }
        }
      }
    }
  }
  EXPECT_EQ(checked, 2 * 3 * 5 * 254 * 254);
}

}  // namespace
}  // namespace paceline

#else
TEST(CudaFp8Widen, NeedsCudaBuild) { GTEST_SKIP() << "this build has no CUDA"; }
#endif
