// The FP8 KV store (launch_qk_norm_rope_store into an e4m3 cache): a K or V value beyond e4m3's
// range is saturated to +-448, never stored as a NaN, and counted in the cache's clamp counter
// (the CUDA executor reports it per step as kv_cache_fp8_clamped_total); values in range are
// stored and not counted.
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "cuda_test_util.h"

#if PACELINE_HAVE_CUDA
#include "decode_test_util.h"

namespace paceline {
namespace {

constexpr int kHeads = 2, kKvHeads = 1, kHeadDim = 32;
constexpr int kQSize = kHeads * kHeadDim, kKvSize = kKvHeads * kHeadDim;
constexpr int kWidth = kQSize + 2 * kKvSize;
constexpr uint8_t kE4m3Max = 0x7e, kE4m3Min = 0xfe;  // +448, -448

struct Store {
  cuda::DeviceBuffer k8, v8, counter, inv_freq;
  explicit Store(int slots)
      : k8(testing::upload(std::vector<uint8_t>(slots * kKvSize, 0))),
        v8(testing::upload(std::vector<uint8_t>(slots * kKvSize, 0))),
        counter(testing::upload(std::vector<unsigned long long>{0})),
        inv_freq(testing::upload(std::vector<float>(kHeadDim / 2, 0.5f))) {}

  // Rows at position 0 (RoPE leaves k as it is), row r into slot r.
  void run(const std::vector<float>& qkv_rows) {
    const int rows = static_cast<int>(qkv_rows.size() / kWidth);
    cuda::DeviceBuffer qkv = testing::upload(qkv_rows);
    cuda::DeviceBuffer positions = testing::upload(std::vector<int32_t>(rows, 0));
    std::vector<int64_t> slot_of(rows);
    for (int r = 0; r < rows; ++r) slot_of[r] = r;
    cuda::DeviceBuffer slots = testing::upload(slot_of);
    cuda::RowInputs in;
    in.positions = positions.as<int32_t>();
    in.slots = slots.as<int64_t>();
    cuda::LayerCache cache;
    cache.k8 = k8.as<uint8_t>();
    cache.v8 = v8.as<uint8_t>();
    cache.fp8_clamped = counter.as<unsigned long long>();
    PACELINE_CUDA_CHECK(cuda::launch_qk_norm_rope_store(
        qkv.as<float>(), rows, {kHeads, kKvHeads, kHeadDim}, nullptr, nullptr, 1e-6f,
        inv_freq.as<float>(), 1.0f, in, cache, nullptr));
    PACELINE_CUDA_CHECK(cudaDeviceSynchronize());
  }
  unsigned long long clamped() const {
    return testing::download<unsigned long long>(counter, 1)[0];
  }
};

TEST(CudaFp8Store, ValuesBeyondE4m3AreSaturatedAndCounted) {
  PACELINE_REQUIRE_GPU();
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> rows(2 * kWidth, 0.25f);
  float* k0 = rows.data() + kQSize;
  float* v0 = k0 + kKvSize;
  // Row 0: in K, 1000 and -1e6 beyond the range, 448 on its edge (kept), 449 beyond; in V, both
  // infinities beyond. Row 1: every value in range.
  k0[0] = 1000.0f;
  k0[1] = -1e6f;
  k0[2] = 448.0f;
  k0[kHeadDim / 2] = 449.0f;
  v0[3] = inf;
  v0[kHeadDim - 1] = -inf;
  Store store(3);
  store.run(rows);
  EXPECT_EQ(store.clamped(), 5u);
  const std::vector<uint8_t> k8 = testing::download<uint8_t>(store.k8, 2 * kKvSize);
  const std::vector<uint8_t> v8 = testing::download<uint8_t>(store.v8, 2 * kKvSize);
  EXPECT_EQ(k8[0], kE4m3Max);
  EXPECT_EQ(k8[1], kE4m3Min);
  EXPECT_EQ(k8[2], kE4m3Max);  // 448 itself
  EXPECT_EQ(k8[kHeadDim / 2], kE4m3Max);
  EXPECT_EQ(v8[3], kE4m3Max);
  EXPECT_EQ(v8[kHeadDim - 1], kE4m3Min);
  // Nothing stored is an e4m3 NaN (s 1111 111).
  for (uint8_t b : k8) EXPECT_NE(b & 0x7f, 0x7f);
  for (uint8_t b : v8) EXPECT_NE(b & 0x7f, 0x7f);

  // In-range rows add nothing.
  store.run(std::vector<float>(3 * kWidth, -3.5f));
  EXPECT_EQ(store.clamped(), 5u);
}

}  // namespace
}  // namespace paceline

#else
TEST(CudaFp8Store, NeedsCudaBuild) {
  GTEST_SKIP() << "this build has no CUDA";
}
#endif
