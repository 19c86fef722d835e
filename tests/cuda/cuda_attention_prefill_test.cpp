// The prefill attention kernels against a double-precision reference on the host: sequences with
// and without a cached prefix, chunks of 1 to 300 rows, GQA groups 1 to 8, head dims 16 to 128,
// block sizes 16, 7 and 1. A row's bits do not depend on how the rows are dealt into tiles, and an
// FP8 cache gives the bits the bf16 cache gives on the same values widened. With
// PACELINE_PREFILL_BENCH=1, the Qwen3-8B shape is timed at 8k and 32k rows and for a 2k chunk
// after a 30k cached prefix, on the wgmma kernel and on the mma.sync kernel (TFLOP/s).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <gtest/gtest.h>

#include "cuda_test_util.h"

#if PACELINE_HAVE_CUDA
#include "decode_test_util.h"
#include "exec/cuda/attention_prefill_mma.cuh"
#include "exec/cuda/attention_prefill_wgmma.cuh"

namespace paceline {
namespace {

using cuda::AttentionShape;
using cuda::DeviceBuffer;

struct Chunk {
  int cached = 0;  // keys already in the cache before the chunk
  int rows = 0;    // rows computed this step
};

struct Problem {
  AttentionShape shape;
  int block_size = 16;
  std::vector<Chunk> seqs;
  std::vector<std::vector<int32_t>> tables;
  std::vector<uint16_t> k, v;  // bf16 [slots][kv_heads][head_dim]
  std::vector<float> qkv;      // [rows][q + 2 kv]
  std::vector<int32_t> positions, row_seq, seq_offset, blocks;
  int64_t num_blocks = 0;
  int num_rows = 0;

  int width() const { return (shape.num_heads + 2 * shape.num_kv_heads) * shape.head_dim; }
  int kv_size() const { return shape.num_kv_heads * shape.head_dim; }

  Problem(AttentionShape s, int bs, std::vector<Chunk> chunks, uint64_t seed)
      : shape(s), block_size(bs), seqs(std::move(chunks)) {
    std::vector<int> ctx;
    for (const Chunk& c : seqs) {
      ctx.push_back(c.cached + c.rows);
      num_blocks += (c.cached + c.rows + bs - 1) / bs;
    }
    num_blocks += 3;
    EXPECT_TRUE(testing::shuffled_tables(ctx, bs, num_blocks, seed, tables));
    for (size_t i = 0; i < seqs.size(); ++i) {
      seq_offset.push_back(static_cast<int32_t>(blocks.size()));
      blocks.insert(blocks.end(), tables[i].begin(), tables[i].end());
      for (int r = 0; r < seqs[i].rows; ++r) {
        positions.push_back(seqs[i].cached + r);
        row_seq.push_back(static_cast<int32_t>(i));
      }
    }
    num_rows = static_cast<int>(positions.size());
    testing::FastRandom rng(seed * 7 + 1);
    const size_t elems = static_cast<size_t>(num_blocks) * bs * kv_size();
    k.resize(elems);
    v.resize(elems);
    for (size_t i = 0; i < elems; ++i) k[i] = testing::bf16_bits(rng.uniform());
    for (size_t i = 0; i < elems; ++i) v[i] = testing::bf16_bits(rng.uniform());
    qkv.resize(static_cast<size_t>(num_rows) * width());
    for (float& x : qkv) x = 6.0f * rng.uniform();  // scores with a spread of a few units
  }

  // Tiles of at most n consecutive rows of one sequence: [seq, first row, count].
  std::vector<int32_t> tiles(int n) const {
    std::vector<int32_t> t;
    int first = 0;
    for (size_t i = 0; i < seqs.size(); ++i) {
      for (int r = 0; r < seqs[i].rows; r += n) {
        t.insert(t.end(), {static_cast<int32_t>(i), first + r, std::min(n, seqs[i].rows - r)});
      }
      first += seqs[i].rows;
    }
    return t;
  }

  // out[head][d] of row r, in double: causal over keys 0..positions[r] of its sequence.
  std::vector<double> reference(int r) const {
    const int hd = shape.head_dim, group = shape.num_heads / shape.num_kv_heads;
    const std::vector<int32_t>& table = tables[row_seq[r]];
    const int keys = positions[r] + 1;
    std::vector<double> out(static_cast<size_t>(shape.num_heads) * hd, 0.0), s(keys);
    auto at = [&](int key) {
      const int64_t slot = int64_t{table[key / block_size]} * block_size + key % block_size;
      return static_cast<size_t>(slot * kv_size());
    };
    for (int h = 0; h < shape.num_heads; ++h) {
      const float* q = &qkv[static_cast<size_t>(r) * width() + static_cast<size_t>(h) * hd];
      const int kvh = h / group;
      double mx = -INFINITY;
      for (int key = 0; key < keys; ++key) {
        const uint16_t* kp = &k[at(key) + kvh * hd];
        double dot = 0;
        for (int d = 0; d < hd; ++d) dot += static_cast<double>(q[d]) * testing::bf16_value(kp[d]);
        s[key] = dot / std::sqrt(static_cast<double>(hd));
        mx = std::max(mx, s[key]);
      }
      double sum = 0;
      for (int key = 0; key < keys; ++key) sum += (s[key] = std::exp(s[key] - mx));
      for (int key = 0; key < keys; ++key) {
        const uint16_t* vp = &v[at(key) + kvh * hd];
        for (int d = 0; d < hd; ++d) out[h * hd + d] += s[key] / sum * testing::bf16_value(vp[d]);
      }
    }
    return out;
  }
};

struct OnDevice {
  const Problem& p;
  DeviceBuffer k, v, qkv, positions, row_seq, seq_offset, blocks, out, tiles;

  explicit OnDevice(const Problem& pr)
      : p(pr),
        k(testing::upload(pr.k)),
        v(testing::upload(pr.v)),
        qkv(testing::upload(pr.qkv)),
        positions(testing::upload(pr.positions)),
        row_seq(testing::upload(pr.row_seq)),
        seq_offset(testing::upload(pr.seq_offset)),
        blocks(testing::upload(pr.blocks)),
        out(static_cast<size_t>(pr.num_rows) * pr.shape.num_heads * pr.shape.head_dim * 2) {}

  cuda::RowInputs in() const {
    cuda::RowInputs r;
    r.positions = positions.as<int32_t>();
    r.row_seq = row_seq.as<int32_t>();
    r.seq_block_offset = seq_offset.as<int32_t>();
    r.blocks = blocks.as<int32_t>();
    return r;
  }

  // The bf16 cache (k, v); with its size, so that the wgmma kernel may copy it in bulk.
  cuda::LayerCache bf16_cache(bool sized = true) const {
    cuda::LayerCache c{k.as<cuda::bf16>(), v.as<cuda::bf16>(), p.block_size};
    if (sized) c.num_slots = p.num_blocks * p.block_size;
    return c;
  }

  // Attention over tiles of at most tile_rows rows (0: the kernel's own size), into `out`
  // poisoned beforehand; cache: the sized bf16 cache unless given.
  std::vector<uint16_t> run(int tile_rows = 0, const cuda::LayerCache* given = nullptr) {
    const int n = tile_rows > 0 ? tile_rows : cuda::prefill_tile_rows(p.shape);
    const std::vector<int32_t> t = p.tiles(n);
    tiles = testing::upload(t);
    PACELINE_CUDA_CHECK(cudaMemset(out.as<void>(), 0xff, out.bytes()));
    const cuda::LayerCache cache = given != nullptr ? *given : bf16_cache();
    PACELINE_CUDA_CHECK(cuda::launch_attention_prefill(qkv.as<float>(), tiles.as<int32_t>(),
                                                       static_cast<int>(t.size() / 3), p.shape,
                                                       in(), cache, out.as<cuda::bf16>(), nullptr));
    PACELINE_CUDA_CHECK(cudaDeviceSynchronize());
    return testing::download<uint16_t>(out, out.bytes() / 2);
  }
};

double check_against_reference(const Problem& p, const std::vector<uint16_t>& got) {
  const size_t per_row = static_cast<size_t>(p.shape.num_heads) * p.shape.head_dim;
  double worst = 0;
  for (int r = 0; r < p.num_rows; ++r) {
    const std::vector<double> ref = p.reference(r);
    double diff = 0, norm = 0;
    bool finite = true;
    for (size_t i = 0; i < per_row; ++i) {
      const double g = testing::bf16_value(got[r * per_row + i]);
      finite = finite && std::isfinite(g);
      diff += (g - ref[i]) * (g - ref[i]);
      norm += ref[i] * ref[i];
    }
    const double e = std::sqrt(diff / norm);
    EXPECT_TRUE(finite) << "row " << r << " (position " << p.positions[r] << ") was not written";
    EXPECT_LE(e, testing::kBf16Tolerance) << "row " << r << ", position " << p.positions[r];
    worst = std::max(worst, e);
  }
  return worst;
}

struct Case {
  AttentionShape shape;
  int block_size;
};

const std::vector<Chunk> kChunks = {{0, 1},   {0, 37}, {100, 50}, {1000, 129},
                                    {0, 300}, {31, 1}, {64, 64},  {4000, 3}};
const std::vector<Case> kCases = {
    {{32, 8, 128}, 16},  // Qwen3-8B
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

// The wgmma kernel copies whole chunks of a sized cache with the bulk tensor copies and the rest
// (the last chunk, or a cache of unknown size) thread by thread: the same values in the same
// places, so the same bits.
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

TEST(CudaPrefillAttention, Fp8CacheMatchesTheBf16CacheOnTheWidenedValuesBitForBit) {
  PACELINE_REQUIRE_GPU();
  uint64_t seed = 200;
  for (const Case& c : kCases) {
    Problem p(c.shape, c.block_size, kChunks, seed);
    std::vector<uint8_t> k8, v8;
    testing::random_fp8_cache(seed++, p.k, p.v, k8, v8);
    OnDevice d(p);
    const std::vector<uint16_t> widened = d.run();
    check_against_reference(p, widened);
    DeviceBuffer dk = testing::upload(k8), dv = testing::upload(v8);
    const cuda::LayerCache cache = testing::fp8_layer_cache(dk, dv, p.block_size);
    const std::vector<uint16_t> fp8 = d.run(0, &cache);
    EXPECT_EQ(testing::count_differing(fp8, widened), 0u)
        << "heads " << c.shape.num_heads << "/" << c.shape.num_kv_heads << ", head_dim "
        << c.shape.head_dim << ", block " << c.block_size;
  }
}

// The Qwen3-8B shape, one layer: a whole prefill of 8k and of 32k rows (no cached prefix), and a
// 2k-row chunk after a 30k-token cached prefix (an agent's next turn); the causal attention's
// FLOPs (4 * heads * head_dim * keys seen, summed over rows) over the median of 5 launches, on
// each tensor-core kernel.
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
  } kernels[] = {{"wgmma", cuda::launch_attention_prefill_wgmma,
                  cuda::prefill_wgmma_tile_rows(qwen3_8b), true},
                 {"wgmma, thread copies", cuda::launch_attention_prefill_wgmma,
                  cuda::prefill_wgmma_tile_rows(qwen3_8b), false},
                 {"mma.sync", cuda::launch_attention_prefill_mma,
                  cuda::prefill_mma_tile_rows(qwen3_8b), false}};
  for (const Chunk chunk : {Chunk{0, 8192}, Chunk{0, 32768}, Chunk{30720, 2048}}) {
    Problem p(qwen3_8b, 16, {chunk}, 9);
    OnDevice d(p);
    double keys_seen = 0;
    for (int r = 0; r < chunk.rows; ++r) keys_seen += chunk.cached + r + 1;
    const double flops = 4.0 * 32 * 128 * keys_seen;
    for (const auto& k : kernels) {
      const cuda::LayerCache cache = d.bf16_cache(k.sized);
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
      std::printf(
          "[ prefill bench ] %-20s %5d rows after %5d cached, one layer: %.3f ms, %.0f TFLOP/s\n",
          k.name, chunk.rows, chunk.cached, median, flops / median / 1e9);
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
