// The GPU KV cache's layout (kernels.h, kv_row): each plane is [blocks][KV heads][block_size]
// [head_dim], so the K/V store puts one head's keys of a block side by side, and a block is still
// one contiguous run of bytes (what the host tier and the prefix cache copy).
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "cuda_test_util.h"

#if PACELINE_HAVE_CUDA
#include "decode_test_util.h"
#include "exec/cuda/kernels.h"

namespace paceline {
namespace {

TEST(CudaKvLayout, RowsAreHeadMajorInsideEachBlock) {
  EXPECT_EQ(cuda::kv_row(0, 0, 0, 2, 4), 0);
  EXPECT_EQ(cuda::kv_row(0, 3, 0, 2, 4), 3);
  EXPECT_EQ(cuda::kv_row(0, 0, 1, 2, 4), 4);  // head 1 after head 0's four keys
  EXPECT_EQ(cuda::kv_row(1, 0, 0, 2, 4), 8);  // block 1 after block 0's two heads
  EXPECT_EQ(cuda::kv_row(5, 2, 1, 2, 4), (5 * 2 + 1) * 4 + 2);
  EXPECT_EQ(cuda::kv_slot_row(5 * 4 + 2, 1, 2, 4), cuda::kv_row(5, 2, 1, 2, 4));
  EXPECT_EQ(cuda::kv_slot_row(7, 0, 1, 7), cuda::kv_row(1, 0, 0, 1, 7));  // blocks of 7
}

// Rows stored into shuffled slots of a bf16 cache (two KV heads, blocks of 4): every K and V
// value lands at its kv_row, and the bytes of block b are those of b's slots alone.
TEST(CudaKvLayout, TheStoreWritesEachHeadsKeysOfABlockSideBySide) {
  PACELINE_REQUIRE_GPU();
  constexpr int kHeads = 4, kKvHeads = 2, kHeadDim = 32, kBlock = 4, kBlocks = 3;
  constexpr int kQSize = kHeads * kHeadDim, kKvSize = kKvHeads * kHeadDim;
  constexpr int kWidth = kQSize + 2 * kKvSize;
  const std::vector<int64_t> slots = {9, 0, 4, 11, 2, 7};  // rows' slots, over three blocks
  const int rows = static_cast<int>(slots.size());
  // Values exact in bf16: k = row + head / 4 + d / 64, v its negative.
  std::vector<float> qkv(static_cast<size_t>(rows) * kWidth, 0.0f);
  auto k_value = [](int r, int h, int d) { return r + h / 4.0f + d / 64.0f; };
  for (int r = 0; r < rows; ++r) {
    for (int h = 0; h < kKvHeads; ++h) {
      for (int d = 0; d < kHeadDim; ++d) {
        qkv[r * kWidth + kQSize + h * kHeadDim + d] = k_value(r, h, d);
        qkv[r * kWidth + kQSize + kKvSize + h * kHeadDim + d] = -k_value(r, h, d);
      }
    }
  }
  const size_t plane = static_cast<size_t>(kBlocks) * kBlock * kKvSize;
  cuda::DeviceBuffer k = testing::upload(std::vector<uint16_t>(plane, 0));
  cuda::DeviceBuffer v = testing::upload(std::vector<uint16_t>(plane, 0));
  cuda::DeviceBuffer x = testing::upload(qkv);
  cuda::DeviceBuffer positions = testing::upload(std::vector<int32_t>(rows, 0));  // RoPE: none
  cuda::DeviceBuffer slot_buf = testing::upload(slots);
  cuda::DeviceBuffer inv_freq = testing::upload(std::vector<float>(kHeadDim / 2, 0.5f));
  cuda::RowInputs in;
  in.positions = positions.as<int32_t>();
  in.slots = slot_buf.as<int64_t>();
  cuda::LayerCache cache;
  cache.k = k.as<cuda::bf16>();
  cache.v = v.as<cuda::bf16>();
  cache.block_size = kBlock;
  PACELINE_CUDA_CHECK(cuda::launch_qk_norm_rope_store(
      x.as<float>(), rows, {kHeads, kKvHeads, kHeadDim}, nullptr, nullptr, 1e-6f,
      inv_freq.as<float>(), 1.0f, in, cache, nullptr));
  PACELINE_CUDA_CHECK(cudaDeviceSynchronize());
  const std::vector<uint16_t> kh = testing::download<uint16_t>(k, plane);
  const std::vector<uint16_t> vh = testing::download<uint16_t>(v, plane);
  size_t wrong = 0;
  for (int r = 0; r < rows; ++r) {
    for (int h = 0; h < kKvHeads; ++h) {
      const int64_t row = cuda::kv_slot_row(slots[r], h, kKvHeads, kBlock);
      // Every element of the row lies inside the slot's block.
      EXPECT_EQ(row * kHeadDim / (kBlock * kKvSize), slots[r] / kBlock);
      for (int d = 0; d < kHeadDim; ++d) {
        const size_t at = static_cast<size_t>(row) * kHeadDim + d;
        wrong += kh[at] != testing::bf16_bits(k_value(r, h, d));
        wrong += vh[at] != testing::bf16_bits(-k_value(r, h, d));
      }
    }
  }
  EXPECT_EQ(wrong, 0u);
}

}  // namespace
}  // namespace paceline

#else
TEST(CudaKvLayout, NeedsCudaBuild) {
  GTEST_SKIP() << "this build has no CUDA";
}
#endif
