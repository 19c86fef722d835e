// A step of more rows than a grid's second dimension holds (65,535): a prefill chunk of 128k
// tokens (`--max-num-batched-tokens 131072`) goes through every row-wise kernel. SwiGLU put the
// rows in that dimension and failed such a step with "invalid argument".
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "cuda_test_util.h"

#if PACELINE_HAVE_CUDA
#include "decode_test_util.h"
#include "exec/cuda/cuda_check.h"
#include "exec/cuda/kernels.h"

namespace paceline {
namespace {

TEST(CudaLongStep, SwigluTakesMoreRowsThanAGridColumn) {
  PACELINE_REQUIRE_GPU();
  constexpr int kRows = 70000;
  constexpr int64_t kWidth = 24;
  std::vector<float> gate_up(static_cast<size_t>(kRows) * 2 * kWidth);
  testing::FastRandom rng(4);
  for (float& v : gate_up) v = 4.0f * rng.uniform();
  cuda::DeviceBuffer d_in = testing::upload(gate_up);
  cuda::DeviceBuffer d_out(static_cast<size_t>(kRows) * kWidth * 2);
  PACELINE_CUDA_CHECK(cudaMemset(d_out.as<void>(), 0xff, d_out.bytes()));
  ASSERT_EQ(cuda::launch_swiglu(d_in.as<float>(), kWidth, kRows, d_out.as<cuda::bf16>(), nullptr),
            cudaSuccess);
  PACELINE_CUDA_CHECK(cudaDeviceSynchronize());
  const std::vector<uint16_t> out =
      testing::download<uint16_t>(d_out, static_cast<size_t>(kRows) * kWidth);
  int wrong = 0;
  for (int r = 0; r < kRows; ++r) {
    for (int64_t i = 0; i < kWidth; ++i) {
      const float g = gate_up[static_cast<size_t>(r * 2 * kWidth + i)];
      const float u = gate_up[static_cast<size_t>(r * 2 * kWidth + kWidth + i)];
      const float want = g / (1.0f + std::exp(-g)) * u;
      const float got = testing::bf16_value(out[static_cast<size_t>(r * kWidth + i)]);
      if (!(std::abs(got - want) <= 1e-2f * std::abs(want) + 1e-3f) && ++wrong <= 5) {
        ADD_FAILURE() << "row " << r << " column " << i << ": " << got << ", want " << want;
      }
    }
  }
  EXPECT_EQ(wrong, 0);
}

}  // namespace
}  // namespace paceline

#else
TEST(CudaLongStep, NeedsCudaBuild) { GTEST_SKIP() << "this build has no CUDA"; }
#endif
