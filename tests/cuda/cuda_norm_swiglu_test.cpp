// The small kernels between the projections: RMSNorm holds a row in registers (widths up to
// 8,192) and gives the bits of the loop over memory it replaced, at every register count and
// gathering rows; it is also held to a double-precision reference. SwiGLU four elements a thread
// gives the bits of one a thread (the misaligned input takes that path).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "cuda_test_util.h"

#if PACELINE_HAVE_CUDA
#include "decode_test_util.h"
#include "exec/cuda/kernels.h"

namespace paceline {
namespace {

TEST(CudaRmsNorm, RegistersGiveTheBitsOfTheLoopAndTheReference) {
  PACELINE_REQUIRE_GPU();
  // 300 rows take the kernel that loads the weights after the sum, the 3 gathered ones the one
  // that loads them with the row (decode-sized launches).
  constexpr int kRows = 300;
  const std::vector<int32_t> gather = {4, 0, 299};
  // One width per register count (4, 8, 16, 32 a thread), ragged ones, and one past them.
  for (int64_t width : {int64_t{64}, int64_t{1000}, int64_t{2048}, int64_t{4096}, int64_t{5000},
                        int64_t{8192}, int64_t{9000}}) {
    std::vector<float> x(static_cast<size_t>(kRows * width)), weight(static_cast<size_t>(width));
    testing::FastRandom rng(static_cast<uint64_t>(width));
    for (float& v : x) v = 4.0f * rng.uniform() - 2.0f;
    for (float& v : weight) v = rng.uniform() + 0.5f;
    const cuda::DeviceBuffer dx = testing::upload(x), dw = testing::upload(weight);
    const cuda::DeviceBuffer dg = testing::upload(gather);
    for (bool gathered : {false, true}) {
      const int rows = gathered ? static_cast<int>(gather.size()) : kRows;
      const int32_t* g = gathered ? dg.as<int32_t>() : nullptr;
      cuda::DeviceBuffer a(static_cast<size_t>(rows * width) * 2), b(a.bytes());
      constexpr float kEps = 1e-6f;
      ASSERT_EQ(cuda::launch_rms_norm(dx.as<float>(), g, dw.as<float>(), width, kEps, rows,
                                      a.as<cuda::bf16>(), nullptr),
                cudaSuccess);
      ASSERT_EQ(cuda::launch_rms_norm_loop(dx.as<float>(), g, dw.as<float>(), width, kEps, rows,
                                           b.as<cuda::bf16>(), nullptr),
                cudaSuccess);
      PACELINE_CUDA_CHECK(cudaDeviceSynchronize());
      const auto ha = testing::download<uint16_t>(a, static_cast<size_t>(rows * width));
      const auto hb = testing::download<uint16_t>(b, static_cast<size_t>(rows * width));
      EXPECT_EQ(ha, hb) << "width " << width << (gathered ? ", gathered" : "");
      double worst = 0.0;
      for (int r = 0; r < rows; ++r) {
        const float* in = x.data() + (gathered ? gather[r] : r) * width;
        double sum = 0.0;
        for (int64_t i = 0; i < width; ++i) sum += static_cast<double>(in[i]) * in[i];
        const double inv = 1.0 / std::sqrt(sum / static_cast<double>(width) + kEps);
        for (int64_t i = 0; i < width; ++i) {
          const double want = weight[i] * (in[i] * inv);
          const double got = testing::bf16_value(ha[static_cast<size_t>(r * width + i)]);
          worst = std::max(worst, std::abs(got - want) / std::max(std::abs(want), 1e-3));
        }
      }
      EXPECT_LT(worst, 1.0 / 128) << "width " << width;  // bf16's rounding: 2^-8 relative
    }
  }
}

TEST(CudaSwiglu, FourElementsAThreadGiveTheBitsOfOne) {
  PACELINE_REQUIRE_GPU();
  constexpr int kRows = 3;
  constexpr int64_t kWidth = 12288;  // Qwen3-8B's intermediate size
  std::vector<float> gate_up(static_cast<size_t>(kRows * 2 * kWidth) + 1);
  testing::FastRandom rng(11);
  for (float& v : gate_up) v = 16.0f * rng.uniform() - 8.0f;
  const cuda::DeviceBuffer d = testing::upload(gate_up);
  cuda::DeviceBuffer four(static_cast<size_t>(kRows * kWidth) * 2), one(four.bytes());
  // From element 1 of the buffer the input is not 16-byte aligned: one element a thread. The
  // aligned call reads the same values from a copy at element 0.
  const std::vector<float> shifted(gate_up.begin() + 1, gate_up.end());
  const cuda::DeviceBuffer aligned = testing::upload(shifted);
  ASSERT_EQ(cuda::launch_swiglu(aligned.as<float>(), kWidth, kRows, four.as<cuda::bf16>(), nullptr),
            cudaSuccess);
  ASSERT_EQ(cuda::launch_swiglu(d.as<float>() + 1, kWidth, kRows, one.as<cuda::bf16>(), nullptr),
            cudaSuccess);
  PACELINE_CUDA_CHECK(cudaDeviceSynchronize());
  const auto h4 = testing::download<uint16_t>(four, static_cast<size_t>(kRows * kWidth));
  const auto h1 = testing::download<uint16_t>(one, static_cast<size_t>(kRows * kWidth));
  EXPECT_EQ(h4, h1);
  // And the values: silu(g) * u within bf16's rounding.
  double worst = 0.0;
  for (int r = 0; r < kRows; ++r) {
    for (int64_t i = 0; i < kWidth; ++i) {
      const double g = shifted[static_cast<size_t>(r * 2 * kWidth + i)];
      const double u = shifted[static_cast<size_t>(r * 2 * kWidth + kWidth + i)];
      const double want = g / (1.0 + std::exp(-g)) * u;
      const double got = testing::bf16_value(h4[static_cast<size_t>(r * kWidth + i)]);
      worst = std::max(worst, std::abs(got - want) / std::max(std::abs(want), 1e-3));
    }
  }
  EXPECT_LT(worst, 1.0 / 128);
}

// gate_up with gate and up in turns of 64 columns (the small-M GEMM's layout, gate_up_layout.h)
// gives the bits of the same values in halves, four elements a thread and one.
TEST(CudaSwiglu, GateAndUpInTurnsGiveTheBitsOfHalves) {
  PACELINE_REQUIRE_GPU();
  constexpr int kRows = 3;
  constexpr int64_t kWidth = 384, kTurn = cuda::kSwigluTurn;
  std::vector<float> halves(static_cast<size_t>(kRows * 2 * kWidth));
  testing::FastRandom rng(13);
  for (float& v : halves) v = 16.0f * rng.uniform() - 8.0f;
  // One spare element in front, for the unaligned call (one element a thread).
  std::vector<float> turns(halves.size() + 1);
  for (int r = 0; r < kRows; ++r) {
    for (int64_t i = 0; i < kWidth; ++i) {
      const auto at = static_cast<size_t>(r * 2 * kWidth + (i / kTurn) * 2 * kTurn + i % kTurn);
      turns[1 + at] = halves[static_cast<size_t>(r * 2 * kWidth + i)];
      turns[1 + at + kTurn] = halves[static_cast<size_t>(r * 2 * kWidth + kWidth + i)];
    }
  }
  const std::vector<float> turns_aligned(turns.begin() + 1, turns.end());
  const cuda::DeviceBuffer d_halves = testing::upload(halves);
  const cuda::DeviceBuffer d_turns = testing::upload(turns),
                           d_aligned = testing::upload(turns_aligned);
  const size_t out = static_cast<size_t>(kRows * kWidth);
  cuda::DeviceBuffer want(out * 2), four(out * 2), one(out * 2);
  ASSERT_EQ(
      cuda::launch_swiglu(d_halves.as<float>(), kWidth, kRows, want.as<cuda::bf16>(), nullptr),
      cudaSuccess);
  ASSERT_EQ(cuda::launch_swiglu(d_aligned.as<float>(), kWidth, kRows, four.as<cuda::bf16>(),
                                nullptr, kTurn),
            cudaSuccess);
  ASSERT_EQ(cuda::launch_swiglu(d_turns.as<float>() + 1, kWidth, kRows, one.as<cuda::bf16>(),
                                nullptr, kTurn),
            cudaSuccess);
  PACELINE_CUDA_CHECK(cudaDeviceSynchronize());
  const auto h_want = testing::download<uint16_t>(want, out);
  EXPECT_EQ(testing::download<uint16_t>(four, out), h_want);
  EXPECT_EQ(testing::download<uint16_t>(one, out), h_want);
  // A turn that does not divide the width is refused.
  EXPECT_EQ(cuda::launch_swiglu(d_aligned.as<float>(), kWidth, kRows, four.as<cuda::bf16>(),
                                nullptr, 100),
            cudaErrorInvalidValue);
}

}  // namespace
}  // namespace paceline

#else
TEST(CudaRmsNorm, NeedsCudaBuild) {
  GTEST_SKIP() << "this build has no CUDA";
}
#endif
