// The prefill attention kernels against a double-precision reference on the host: sequences with
// and without a cached prefix, chunks of 1 to 300 rows, GQA groups 1 to 8, head dims 16 to 128,
// block sizes 16, 7 and 1. A row's bits do not depend on how the rows are dealt into tiles, and an
// FP8 cache is multiplied in f16 on the wgmma kernels (closer to the reference than bf16) and as
// the bf16 cache of its values on the others. With
// PACELINE_PREFILL_BENCH=1, the Qwen3-8B shape is timed at 8k and 32k rows and for a 2k chunk
// after a 30k cached prefix, on the wgmma kernel (warp-specialized on a sized cache), the mma.sync
// kernel and the FP8 kernel (from a bf16 and from an FP8 cache) (TFLOP/s).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cuda_test_util.h"

#if PACELINE_HAVE_CUDA
#include "decode_test_util.h"
#include "exec/cuda/attention_prefill_fp8.cuh"
#include "exec/cuda/attention_prefill_mma.cuh"
#include "exec/cuda/attention_prefill_wgmma.cuh"
#include "prefill_problem.h"

namespace paceline {
namespace {

using cuda::AttentionShape;
using cuda::DeviceBuffer;

using testing::Chunk;
using Problem = testing::PrefillProblem;
using OnDevice = testing::PrefillOnDevice;
using testing::check_against_reference;

struct Case {
  AttentionShape shape;
  int block_size;
};

const std::vector<Chunk> kChunks = {{0, 1},   {0, 37}, {100, 50}, {1000, 129},
                                    {0, 300}, {31, 1}, {64, 64},  {4000, 3}};
const std::vector<Case> kCases = {
    {{32, 8, 128}, 16},  // Qwen3-8B
    {{32, 8, 128}, 64},  // blocks of 64: two a chunk, two of the four producer warps copy none
    {{32, 4, 128}, 7},   // group 8, blocks of 7 (no shift) on the wgmma kernel
    {{64, 8, 128}, 16},  // group 8 (Qwen3-32B)
    {{16, 8, 128}, 1},   // group 2, one key per block
    {{8, 1, 64}, 7},     // group 8, blocks of 7
    {{4, 2, 32}, 16},    // the tiny Qwen3 fixture's shape
    {{4, 1, 16}, 16},    // the tiny Llama fixture's
};

TEST(CudaPrefillAttention, MatchesReferenceAcrossShapesAndChunks) {
  PACELINE_REQUIRE_GPU();
  uint64_t seed = 1;
  for (const Case& c : kCases) {
    Problem p(c.shape, c.block_size, kChunks, seed++);
    OnDevice d(p);
    const double e = check_against_reference(p, d.run());
    std::printf("[ prefill ] heads %d/%d, head_dim %d, block %d: worst relative error %.2e\n",
                c.shape.num_heads, c.shape.num_kv_heads, c.shape.head_dim, c.block_size, e);
  }
}

// The tiles only deal rows to blocks: a row's bits are the same in tiles of any size.
TEST(CudaPrefillAttention, RowBitsDoNotDependOnTheTiling) {
  PACELINE_REQUIRE_GPU();
  uint64_t seed = 100;
  for (const Case& c : kCases) {
    Problem p(c.shape, c.block_size, kChunks, seed++);
    OnDevice d(p);
    const std::vector<uint16_t> full = d.run();
    for (int n : {1, 5}) {
      const std::vector<uint16_t> other = d.run(n);
      EXPECT_EQ(testing::count_differing(other, full), 0u)
          << "tiles of " << n << " rows, heads " << c.shape.num_heads << "/" << c.shape.num_kv_heads
          << ", head_dim " << c.shape.head_dim;
    }
  }
}

// A sized bf16 cache goes to the warp-specialized kernel (bulk tensor copies by a producer
// warpgroup), a cache of unknown size to the two-warpgroup kernel (thread copies): the same values
// in the same places, the same arithmetic in the same order, so the same bits.
// (PACELINE_PREFILL_ATTENTION=wgmma: both take the two-warpgroup kernel, bulk against thread
// copies.)
TEST(CudaPrefillAttention, BulkCopiesGiveTheBitsOfThreadCopies) {
  PACELINE_REQUIRE_GPU();
  uint64_t seed = 300;
  for (const Case& c : kCases) {
    Problem p(c.shape, c.block_size, kChunks, seed++);
    OnDevice d(p);
    const cuda::LayerCache sized = d.bf16_cache(true);
    const cuda::LayerCache unsized = d.bf16_cache(false);
    // The sized cache takes the bulk copies wherever its blocks allow them (not a silent
    // fallback to thread copies), the unsized one never.
    const bool whole_groups = c.block_size % 8 == 0 && 128 % c.block_size == 0;
    EXPECT_EQ(cuda::prefill_wgmma_bulk_copies(c.shape, sized),
              whole_groups && cuda::prefill_wgmma_supported(c.shape))
        << "block " << c.block_size;
    EXPECT_FALSE(cuda::prefill_wgmma_bulk_copies(c.shape, unsized));
    const std::vector<uint16_t> bulk = d.run();
    EXPECT_EQ(testing::count_differing(d.run(0, &unsized), bulk), 0u)
        << "heads " << c.shape.num_heads << "/" << c.shape.num_kv_heads << ", head_dim "
        << c.shape.head_dim << ", block " << c.block_size;
  }
}

// An FP8 cache is widened exactly. The wgmma kernels (head_dim 128) widen it to f16 and multiply
// on f16 tensor cores, q and P in f16 as well, so on the same values their rows are closer to the
// reference than the bf16 cache's (f16 has three more mantissa bits than bf16), bulk copies giving
// the bits of cp.async; the mma.sync kernel widens it to bf16 and gives the bf16 cache's bits.
TEST(CudaPrefillAttention, Fp8CacheOnF16TensorCoresIsCloserThanTheBf16CacheOnItsValues) {
  PACELINE_REQUIRE_GPU();
  uint64_t seed = 200;
  for (const Case& c : kCases) {
    Problem p(c.shape, c.block_size, kChunks, seed);
    std::vector<uint8_t> k8, v8;
    testing::random_fp8_cache(seed++, p.k, p.v, k8, v8);
    OnDevice d(p);
    const std::vector<std::vector<double>> refs = p.references(false);
    const std::vector<uint16_t> widened = d.run();
    const testing::RowErrors bf16 = testing::row_errors(p, refs, widened, testing::kBf16Tolerance);
    DeviceBuffer dk = testing::upload(k8), dv = testing::upload(v8);
    // Its size said (the bytes by bulk copies where the blocks allow them) and not (cp.async).
    const cuda::LayerCache sized =
        testing::fp8_layer_cache(dk, dv, p.block_size, int64_t{p.num_blocks} * p.block_size);
    const cuda::LayerCache unsized = testing::fp8_layer_cache(dk, dv, p.block_size);
    const bool wgmma = cuda::prefill_wgmma_supported(c.shape);
    const bool whole_groups = c.block_size % 8 == 0 && 128 % c.block_size == 0;
    EXPECT_EQ(cuda::prefill_wgmma_bulk_copies(c.shape, sized), whole_groups && wgmma)
        << "block " << c.block_size;
    EXPECT_FALSE(cuda::prefill_wgmma_bulk_copies(c.shape, unsized));
    const std::vector<uint16_t> fp8 = d.run(0, &sized);
    const std::string where = "heads " + std::to_string(c.shape.num_heads) + "/" +
                              std::to_string(c.shape.num_kv_heads) + ", head_dim " +
                              std::to_string(c.shape.head_dim) + ", block " +
                              std::to_string(c.block_size);
    EXPECT_EQ(testing::count_differing(d.run(0, &unsized), fp8), 0u) << where << ", unsized";
    if (wgmma) {
      const testing::RowErrors f16 = testing::row_errors(p, refs, fp8, testing::kBf16Tolerance);
      std::printf("[ prefill ] %s: rms relative error, FP8 cache on f16 %.3e, bf16 cache %.3e\n",
                  where.c_str(), f16.rms, bf16.rms);
      EXPECT_LT(f16.rms, bf16.rms) << where;
    } else {
      EXPECT_EQ(testing::count_differing(fp8, widened), 0u) << where;
    }
  }
}

// The Qwen3-8B shape, one layer: a whole prefill of 8k and of 32k rows (no cached prefix), and a
// 2k-row chunk after a 30k-token cached prefix (an agent's next turn); the causal attention's
// FLOPs (4 * heads * head_dim * keys seen, summed over rows) over the median of 5 launches, on
// each tensor-core kernel (FP8: the same FLOPs counted, at FP8's accuracy, docs/cuda.md), and a
// hash of the output's bits (two builds meant to give the same bits compared in one run).
TEST(CudaPrefillAttentionBench, TensorRate) {
  PACELINE_REQUIRE_GPU();
  if (std::getenv("PACELINE_PREFILL_BENCH") == nullptr) {
    GTEST_SKIP() << "set PACELINE_PREFILL_BENCH=1 to time the prefill attention";
  }
  using Launch = cudaError_t (*)(const float*, const int32_t*, int, AttentionShape, cuda::RowInputs,
                                 cuda::LayerCache, cuda::bf16*, cudaStream_t);
  const AttentionShape qwen3_8b{32, 8, 128};
  const struct {
    const char* name;
    Launch launch;
    int tile_rows;
    bool sized;  // the wgmma kernel copies a sized cache in bulk
    bool fp8_cache;
  } kernels[] = {{"wgmma", cuda::launch_attention_prefill_wgmma,
                  cuda::prefill_wgmma_tile_rows(qwen3_8b), true, false},
                 {"wgmma, thread copies", cuda::launch_attention_prefill_wgmma,
                  cuda::prefill_wgmma_tile_rows(qwen3_8b), false, false},
                 {"mma.sync", cuda::launch_attention_prefill_mma,
                  cuda::prefill_mma_tile_rows(qwen3_8b), false, false},
                 {"fp8", cuda::launch_attention_prefill_fp8, cuda::prefill_fp8_tile_rows(qwen3_8b),
                  false, false},
                 {"fp8, fp8 cache", cuda::launch_attention_prefill_fp8,
                  cuda::prefill_fp8_tile_rows(qwen3_8b), false, true},
                 {"wgmma, fp8 cache", cuda::launch_attention_prefill_wgmma,
                  cuda::prefill_wgmma_tile_rows(qwen3_8b), true, true},
                 {"wgmma, fp8, cp.async", cuda::launch_attention_prefill_wgmma,
                  cuda::prefill_wgmma_tile_rows(qwen3_8b), false, true}};
  for (const Chunk chunk : {Chunk{0, 8192}, Chunk{0, 32768}, Chunk{30720, 2048}}) {
    Problem p(qwen3_8b, 16, {chunk}, 9);
    std::vector<uint8_t> k8, v8;
    testing::random_fp8_cache(9, p.k, p.v, k8, v8);  // e4m3 values in both caches
    OnDevice d(p);
    DeviceBuffer dk = testing::upload(k8), dv = testing::upload(v8);
    double keys_seen = 0;
    for (int r = 0; r < chunk.rows; ++r) keys_seen += chunk.cached + r + 1;
    const double flops = 4.0 * 32 * 128 * keys_seen;
    for (const auto& k : kernels) {
      const cuda::LayerCache cache =
          k.fp8_cache ? testing::fp8_layer_cache(dk, dv, p.block_size,
                                                 k.sized ? int64_t{p.num_blocks} * p.block_size : 0)
                      : d.bf16_cache(k.sized);
      const std::vector<int32_t> t = p.tiles(k.tile_rows);
      d.tiles = testing::upload(t);
      std::vector<float> ms;
      cudaEvent_t a, b;
      PACELINE_CUDA_CHECK(cudaEventCreate(&a));
      PACELINE_CUDA_CHECK(cudaEventCreate(&b));
      for (int i = 0; i < 6; ++i) {
        PACELINE_CUDA_CHECK(cudaEventRecord(a));
        PACELINE_CUDA_CHECK(k.launch(d.qkv.as<float>(), d.tiles.as<int32_t>(),
                                     static_cast<int>(t.size() / 3), p.shape, d.in(), cache,
                                     d.out.as<cuda::bf16>(), nullptr));
        PACELINE_CUDA_CHECK(cudaEventRecord(b));
        PACELINE_CUDA_CHECK(cudaEventSynchronize(b));
        float m = 0;
        PACELINE_CUDA_CHECK(cudaEventElapsedTime(&m, a, b));
        if (i > 0) ms.push_back(m);  // the first launch pays for the module load
      }
      std::sort(ms.begin(), ms.end());
      const double median = ms[ms.size() / 2];
      const uint64_t bits =
          testing::bits_hash(testing::download<uint16_t>(d.out, d.out.bytes() / 2));
      std::printf(
          "[ prefill bench ] %-20s %5d rows after %5d cached, one layer: %.3f ms, %.0f TFLOP/s, "
          "bits %016llx\n",
          k.name, chunk.rows, chunk.cached, median, flops / median / 1e9,
          static_cast<unsigned long long>(bits));
      cudaEventDestroy(a);
      cudaEventDestroy(b);
    }
  }
}

}  // namespace
}  // namespace paceline

#else
TEST(CudaPrefillAttention, NeedsCudaBuild) {
  GTEST_SKIP() << "this build has no CUDA";
}
#endif
