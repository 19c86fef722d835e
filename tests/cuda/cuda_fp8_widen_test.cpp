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

}  // namespace
}  // namespace paceline

#else
TEST(CudaFp8Widen, NeedsCudaBuild) { GTEST_SKIP() << "this build has no CUDA"; }
#endif
