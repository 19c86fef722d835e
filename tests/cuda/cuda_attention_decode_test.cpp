// The decode attention kernels against a double-precision reference on the host: contexts from 1
// key to 128k (block-size multiples and not, pieces of every length), GQA groups 1 to 8, head
// dims 16 to 256, block sizes 16, 1, 7 and 32, a padding row; every output written. And a row's
// bits do not depend on the batch it is in, on the order of the rows, or on graph replay.
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cuda_test_util.h"

#if PACELINE_HAVE_CUDA
#include "decode_test_util.h"
#include "exec/cuda/cuda_model.h"

namespace paceline {
namespace {

using cuda::AttentionShape;
using cuda::DeviceBuffer;
using testing::DecodeRows;

struct Problem {
  AttentionShape shape;
  int block_size = 16;
  cuda::DecodeSplits splits = cuda::kDecodePlanBf16;
  std::vector<int> ctx;  // per row; 0 is a padding row
  std::vector<std::vector<int32_t>> tables;
  std::vector<uint16_t> k, v;  // bf16, head-major blocks (cuda::kv_row)
  std::vector<float> qkv;      // [rows][q + 2 kv]
  int64_t num_blocks = 0;

  int width() const { return (shape.num_heads + 2 * shape.num_kv_heads) * shape.head_dim; }
  int kv_size() const { return shape.num_kv_heads * shape.head_dim; }

  Problem(AttentionShape s, int bs, std::vector<int> contexts, uint64_t seed)
      : shape(s), block_size(bs), ctx(std::move(contexts)) {
    for (int c : ctx) num_blocks += (c + bs - 1) / bs;
    num_blocks += 3;
    EXPECT_TRUE(testing::shuffled_tables(ctx, bs, num_blocks, seed, tables));
    testing::FastRandom rng(seed * 7 + 1);
    const size_t elems = static_cast<size_t>(num_blocks) * bs * kv_size();
    k.resize(elems);
    v.resize(elems);
    for (size_t i = 0; i < elems; ++i) k[i] = testing::bf16_bits(rng.uniform());
    for (size_t i = 0; i < elems; ++i) v[i] = testing::bf16_bits(rng.uniform());
    // q large enough that the softmax is far from flat (scores with a spread of a few units).
    qkv.resize(ctx.size() * static_cast<size_t>(width()));
    for (float& x : qkv) x = 6.0f * rng.uniform();
  }

  // out[head][d] of row r, in double.
  std::vector<double> reference(size_t r) const {
    const int hd = shape.head_dim, group = shape.num_heads / shape.num_kv_heads;
    std::vector<double> out(static_cast<size_t>(shape.num_heads) * hd, 0.0);
    if (ctx[r] == 0) return out;
    std::vector<double> s(static_cast<size_t>(ctx[r]));
    for (int h = 0; h < shape.num_heads; ++h) {
      const float* q = &qkv[r * width() + static_cast<size_t>(h) * hd];
      const int kvh = h / group;
      double mx = -INFINITY;
      for (int key = 0; key < ctx[r]; ++key) {
        const int64_t row = cuda::kv_row(tables[r][key / block_size], key % block_size, kvh,
                                         shape.num_kv_heads, block_size);
        const uint16_t* kp = &k[static_cast<size_t>(row * hd)];
        double dot = 0;
        for (int d = 0; d < hd; ++d) dot += static_cast<double>(q[d]) * testing::bf16_value(kp[d]);
        s[key] = dot / std::sqrt(static_cast<double>(hd));
        mx = std::max(mx, s[key]);
      }
      double sum = 0;
      for (int key = 0; key < ctx[r]; ++key) sum += (s[key] = std::exp(s[key] - mx));
      for (int key = 0; key < ctx[r]; ++key) {
        const int64_t row = cuda::kv_row(tables[r][key / block_size], key % block_size, kvh,
                                         shape.num_kv_heads, block_size);
        const uint16_t* vp = &v[static_cast<size_t>(row * hd)];
        for (int d = 0; d < hd; ++d) out[h * hd + d] += s[key] / sum * testing::bf16_value(vp[d]);
      }
    }
    return out;
  }
};

// The device side of a Problem, and launches of the kernels on it: its bf16 cache, or after
// use_fp8 an FP8 cache (whose widened values the caller has put in the problem's k and v).
struct OnDevice {
  const Problem& p;
  DeviceBuffer k, v, qkv, acc, ml, out;
  DeviceBuffer k8, v8;
  bool fp8 = false;
  DecodeRows rows;

  explicit OnDevice(const Problem& pr)
      : p(pr), k(testing::upload(pr.k)), v(testing::upload(pr.v)), qkv(testing::upload(pr.qkv)),
        rows(pr.ctx, pr.tables) {
    const size_t n = pr.ctx.size() * static_cast<size_t>(pr.shape.num_heads) * pr.splits.max_splits;
    acc = DeviceBuffer(n * pr.shape.head_dim * sizeof(float));
    ml = DeviceBuffer(n * 2 * sizeof(float));
    out = DeviceBuffer(pr.ctx.size() * static_cast<size_t>(pr.shape.num_heads) * pr.shape.head_dim * 2);
  }

  void use_fp8(const std::vector<uint8_t>& k_bytes, const std::vector<uint8_t>& v_bytes) {
    k8 = testing::upload(k_bytes);
    v8 = testing::upload(v_bytes);
    fp8 = true;
  }
  cuda::LayerCache cache() const {
    // Its size said, so that an FP8 cache may be copied in bulk (DecodeSplits::fp8_bulk).
    if (fp8) return testing::fp8_layer_cache(k8, v8, p.block_size, p.num_blocks * p.block_size);
    return cuda::LayerCache{k.as<cuda::bf16>(), v.as<cuda::bf16>(), p.block_size};
  }

  // Attention for the rows listed (indices into the problem), into `out` poisoned beforehand.
  void run(const std::vector<int32_t>& list, cudaStream_t stream = nullptr, bool poison = true) {
    if (poison) PACELINE_CUDA_CHECK(cudaMemsetAsync(out.as<void>(), 0xff, out.bytes(), stream));
    const int32_t* d_list = rows.rows.as<int32_t>();
    if (!list.empty()) {
      list_buf = testing::upload(list);
      d_list = list_buf.as<int32_t>();
    }
    const int n = list.empty() ? rows.num_rows : static_cast<int>(list.size());
    PACELINE_CUDA_CHECK(cuda::launch_attention_decode(qkv.as<float>(), d_list, n, p.splits, p.shape,
                                                      rows.in(), cache(), acc.as<float>(),
                                                      ml.as<float>(), out.as<cuda::bf16>(),
                                                      stream));
  }
  std::vector<uint16_t> result() const {
    PACELINE_CUDA_CHECK(cudaDeviceSynchronize());
    return testing::download<uint16_t>(out, out.bytes() / 2);
  }
  DeviceBuffer list_buf;
};

// Every row within tolerance of the reference; returns the worst relative error.
double check_against_reference(const Problem& p, const std::vector<uint16_t>& got) {
  const size_t per_row = static_cast<size_t>(p.shape.num_heads) * p.shape.head_dim;
  double worst = 0;
  for (size_t r = 0; r < p.ctx.size(); ++r) {
    const std::vector<double> ref = p.reference(r);
    double diff = 0, norm = 0;
    bool finite = true;
    for (size_t i = 0; i < per_row; ++i) {
      const double g = testing::bf16_value(got[r * per_row + i]);
      finite = finite && std::isfinite(g);
      diff += (g - ref[i]) * (g - ref[i]);
      norm += ref[i] * ref[i];
    }
    const double e = p.ctx[r] == 0 ? std::sqrt(diff) : std::sqrt(diff / norm);
    EXPECT_TRUE(finite) << "row " << r << " (context " << p.ctx[r] << ") was not written";
    EXPECT_LE(e, p.ctx[r] == 0 ? 0.0 : testing::kBf16Tolerance)
        << "row " << r << ", context " << p.ctx[r];
    worst = std::max(worst, e);
  }
  return worst;
}

struct Case {
  AttentionShape shape;
  int block_size;
  std::vector<int> ctx;
};

const std::vector<int> kShort = {1, 2, 15, 16, 17, 0, 63, 64, 65, 100, 1000, 4097, 9000};

TEST(CudaDecodeAttention, MatchesReferenceAcrossShapesAndContexts) {
  PACELINE_REQUIRE_GPU();
  const std::vector<Case> cases = {
      {{32, 8, 128}, 16, {1, 17, 0, 129, 4097, 33000, 131072}},  // Qwen3-8B, up to 128k
      {{32, 8, 128}, 16, kShort},
      {{64, 8, 128}, 16, kShort},  // group 8 (Qwen3-32B)
      {{16, 8, 128}, 1, kShort},   // group 2, one key per block
      {{8, 8, 256}, 7, kShort},    // group 1, blocks of 7
      {{8, 1, 64}, 32, kShort},
      {{4, 2, 32}, 16, kShort},    // the tiny Qwen3 fixture's shape
      {{4, 1, 16}, 16, kShort},    // the tiny Llama fixture's
  };
  uint64_t seed = 1;
  for (const Case& c : cases) {
    Problem p(c.shape, c.block_size, c.ctx, seed++);
    OnDevice d(p);
    d.run({});
    const double e = check_against_reference(p, d.result());
    std::printf("[ decode ] heads %d/%d, head_dim %d, block %d: worst relative error %.2e\n",
                c.shape.num_heads, c.shape.num_kv_heads, c.shape.head_dim, c.block_size, e);
  }
}

TEST(CudaDecodeAttention, OtherSplitPlansMatchReference) {
  PACELINE_REQUIRE_GPU();
  // The last has the long regime from 2k keys on: 9,000 keys are 18 pieces of 512.
  for (cuda::DecodeSplits s : {cuda::DecodeSplits{1, 128}, cuda::DecodeSplits{4, 64},
                               cuda::DecodeSplits{64, 256}, cuda::DecodeSplits{48, 64, 4, 512}}) {
    Problem p({32, 8, 128}, 16, kShort, 40 + s.max_splits);
    p.splits = s;
    OnDevice d(p);
    d.run({});
    const double e = check_against_reference(p, d.result());
    std::printf("[ decode ] plan %d x >= %d keys (long: %d, a piece per %d): worst relative "
                "error %.2e\n", s.max_splits, s.min_chunk, s.short_splits, s.long_chunk, e);
  }
}

// More rows than one launch takes (512): the launcher cuts them into several launches.
TEST(CudaDecodeAttention, ManyRowsTakeSeveralLaunches) {
  PACELINE_REQUIRE_GPU();
  std::vector<int> ctx;
  for (int i = 0; i < 700; ++i) ctx.push_back(i % 50 == 7 ? 0 : 1 + (i * 7919) % 400);
  Problem p({8, 2, 64}, 16, ctx, 77);
  OnDevice d(p);
  d.run({});
  const double e = check_against_reference(p, d.result());
  std::printf("[ decode ] 700 rows: worst relative error %.2e\n", e);
}

// The FP8 cache's kernel against the reference over the values the cache holds (every e4m3 value
// is a bf16 and an f16 value): within the bf16 kernel's tolerance, and no less accurate than the
// bf16 kernel on those values widened to bf16 (its q and p are f16, with 3 more mantissa bits than
// bf16: on the H200 it came out 2-3.5 times closer). The FP8 kernel reads its own tile layout (Fp8Layout: e4m3 bytes, other swizzles,
// four stages) and widens the fragments in registers, so every path of it is covered: one key,
// partial tiles (15, 17, 65, ...), a warp without tiles, pieces of every plan, 128k keys and
// 131,071 (the last context of a 131,072-token window), each head size, block sizes 1, 7, 16 and
// 32.
void expect_fp8_matches_bf16(const Case& c, cuda::DecodeSplits splits, uint64_t seed) {
  Problem p(c.shape, c.block_size, c.ctx, seed);
  p.splits = splits;
  std::vector<uint8_t> k8, v8;
  testing::random_fp8_cache(seed, p.k, p.v, k8, v8);
  OnDevice d(p);
  d.run({});
  const std::vector<uint16_t> widened = d.result();
  const double e_bf16 = check_against_reference(p, widened);
  d.use_fp8(k8, v8);
  d.run({});
  const std::vector<uint16_t> fp8 = d.result();
  const double e_fp8 = check_against_reference(p, fp8);
  const std::string what = "heads " + std::to_string(c.shape.num_heads) + "/" +
                           std::to_string(c.shape.num_kv_heads) + ", head_dim " +
                           std::to_string(c.shape.head_dim) + ", block " +
                           std::to_string(c.block_size) + ", plan " +
                           std::to_string(splits.max_splits) + " x >= " +
                           std::to_string(splits.min_chunk) + " (long: " +
                           std::to_string(splits.short_splits) + ", a piece per " +
                           std::to_string(splits.long_chunk) + ")";
  std::printf("[ decode fp8 ] %s: worst relative error %.2e (bf16 kernel on the same values %.2e)\n",
              what.c_str(), e_fp8, e_bf16);
  EXPECT_LE(e_fp8, e_bf16 * 1.25 + 1e-4) << what;
}

// The outputs of a problem with one switch of its plan off, then on: over an FP8 cache (k8, v8)
// or, with k8 empty, the bf16 one.
std::pair<std::vector<uint16_t>, std::vector<uint16_t>> switch_off_and_on(
    Problem& p, const std::vector<uint8_t>& k8, const std::vector<uint8_t>& v8,
    bool cuda::DecodeSplits::*which) {
  OnDevice d(p);
  if (!k8.empty()) d.use_fp8(k8, v8);  // empty: the bf16 cache
  p.splits.*which = false;  // d reads p's plan at each launch
  d.run({});
  std::vector<uint16_t> off = d.result();
  p.splits.*which = true;
  d.run({});
  return {std::move(off), d.result()};
}

// The FP8 cases: every head size, groups of 1 to 8, block sizes 1 to 32, long contexts.
std::vector<Case> fp8_cases() {
  return {
      {{32, 8, 128}, 16, {1, 15, 17, 0, 129, 4097, 33000, 131071, 131072}},
      {{32, 8, 128}, 16, kShort},
      {{64, 8, 128}, 16, kShort},
      {{16, 8, 128}, 1, kShort},
      {{8, 8, 256}, 7, kShort},
      {{8, 1, 64}, 32, kShort},
      {{4, 2, 32}, 16, kShort},
      {{4, 1, 16}, 16, kShort},
  };
}

TEST(CudaDecodeAttention, Fp8CacheMatchesTheReferenceOnTheStoredValues) {
  PACELINE_REQUIRE_GPU();
  uint64_t seed = 500;
  for (const Case& c : fp8_cases()) expect_fp8_matches_bf16(c, cuda::kDecodePlanFp8, seed++);
}

// Bulk copies of an FP8 cache's tiles (DecodeSplits::fp8_bulk: two bulk tensor copies a tile at
// head_dim 128 and blocks of 16, the copy engine's swizzle) give the bits of the threads' copies.
// A bulk copy brings a row's whole last block, so its slots past the context here hold e4m3 NaNs
// (0x7f, 0xff), which the threads' copies never read (their keys past the context are clamped
// onto the last one) and the bulk kernel must mask.
TEST(CudaDecodeAttention, Fp8BulkCopiesKeepTheBitsAndIgnoreTheSlotsPastTheContext) {
  PACELINE_REQUIRE_GPU();
  const std::vector<int> ctx = {1, 15, 16, 17, 0, 129, 4097, 33000, 2000, 31, 64, 65};
  uint64_t seed = 950;
  for (const AttentionShape shape : {AttentionShape{32, 8, 128}, AttentionShape{64, 8, 128},
                                     AttentionShape{8, 1, 128}}) {
    Problem p(shape, 16, ctx, seed++);
    p.splits = cuda::kDecodePlanFp8;
    std::vector<uint8_t> k8, v8;
    testing::random_fp8_cache(seed, p.k, p.v, k8, v8);
    size_t poisoned = 0;
    for (size_t r = 0; r < ctx.size(); ++r) {
      for (int off = ctx[r] % 16; ctx[r] % 16 != 0 && off < 16; ++off) {
        for (int h = 0; h < shape.num_kv_heads; ++h) {
          const int64_t row = cuda::kv_row(p.tables[r].back(), off, h, shape.num_kv_heads, 16);
          for (int e = 0; e < 128; ++e) {
            k8[row * 128 + e] = e % 2 ? 0x7f : 0xff;
            v8[row * 128 + e] = e % 2 ? 0xff : 0x7f;
          }
          ++poisoned;
        }
      }
    }
    const auto [threads, bulk] = switch_off_and_on(p, k8, v8, &cuda::DecodeSplits::fp8_bulk);
    const double e = check_against_reference(p, bulk);
    const size_t differ = testing::count_differing(bulk, threads);
    EXPECT_EQ(differ, 0u) << "heads " << shape.num_heads << "/" << shape.num_kv_heads;
    std::printf("[ decode fp8 bulk ] heads %d/%d: %zu of %zu elements differ from the threads' "
                "copies, %zu rows of NaNs past the contexts, worst relative error %.2e\n",
                shape.num_heads, shape.num_kv_heads, differ, bulk.size(), poisoned, e);
  }
}

// The block-table entries loaded kDecodeTableLead turns ahead (DecodeSplits::fp8_table_lead)
// give the bits of one turn ahead: every FP8 case (head sizes 16 to 256, block sizes 1 to 32, so
// tiles over several blocks, contexts up to 131,072 and items of fewer tiles than the ring), at
// the production plan and at one of short pieces.
TEST(CudaDecodeAttention, Fp8TableLeadKeepsTheBits) {
  PACELINE_REQUIRE_GPU();
  uint64_t seed = 1200;
  for (const Case& c : fp8_cases()) {
    for (const cuda::DecodeSplits plan : {cuda::kDecodePlanFp8, cuda::DecodeSplits{64, 64}}) {
      Problem p(c.shape, c.block_size, c.ctx, seed++);
      p.splits = plan;
      std::vector<uint8_t> k8, v8;
      testing::random_fp8_cache(seed, p.k, p.v, k8, v8);
      const auto [one, lead] = switch_off_and_on(p, k8, v8, &cuda::DecodeSplits::fp8_table_lead);
      const double e = check_against_reference(p, lead);
      const size_t differ = testing::count_differing(lead, one);
      EXPECT_EQ(differ, 0u) << "heads " << c.shape.num_heads << "/" << c.shape.num_kv_heads
                            << ", head_dim " << c.shape.head_dim << ", blocks of " << c.block_size;
      std::printf("[ decode fp8 table lead ] heads %d/%d, head_dim %d, blocks of %d, plan %d x "
                  ">=%d: %zu of %zu elements differ from one turn ahead, worst relative error "
                  "%.2e\n",
                  c.shape.num_heads, c.shape.num_kv_heads, c.shape.head_dim, c.block_size,
                  plan.max_splits, plan.min_chunk, differ, lead.size(), e);
    }
  }
}

// The next item's q loaded during an item's merge (DecodeSplits::q_next) gives the bits of q
// loaded at the item's start: bf16 and FP8 caches, every head size, groups of 1 to 8, the
// production plans and one of short pieces (many items a block), and with the FP8 block-table
// lead on as well.
TEST(CudaDecodeAttention, LoadingTheNextItemsQDuringTheMergeKeepsTheBits) {
  PACELINE_REQUIRE_GPU();
  uint64_t seed = 1400;
  for (const bool fp8 : {false, true}) {
    for (const Case& c : fp8_cases()) {
      for (const cuda::DecodeSplits plan :
           {fp8 ? cuda::kDecodePlanFp8 : cuda::kDecodePlanBf16, cuda::DecodeSplits{64, 64}}) {
        for (const bool lead : {false, true}) {
          if (lead && !fp8) continue;
          Problem p(c.shape, c.block_size, c.ctx, seed++);
          p.splits = plan;
          p.splits.fp8_table_lead = lead;
          std::vector<uint8_t> k8, v8;
          if (fp8) testing::random_fp8_cache(seed, p.k, p.v, k8, v8);
          const auto [at_start, ahead] =
              switch_off_and_on(p, k8, v8, &cuda::DecodeSplits::q_next);
          // Against the reference once a case (equal bits are the claim; the short plan's
          // reference is the other tests').
          const double e = plan.max_splits == 64 ? 0.0 : check_against_reference(p, ahead);
          const size_t differ = testing::count_differing(ahead, at_start);
          EXPECT_EQ(differ, 0u) << (fp8 ? "fp8" : "bf16") << " heads " << c.shape.num_heads << "/"
                                << c.shape.num_kv_heads << ", head_dim " << c.shape.head_dim;
          std::printf("[ decode q next ] %s%s, heads %d/%d, head_dim %d, plan %d x >=%d: %zu of "
                      "%zu elements differ from q loaded at the start, worst relative error "
                      "%.2e\n",
                      fp8 ? "fp8" : "bf16", lead ? " (table lead)" : "", c.shape.num_heads,
                      c.shape.num_kv_heads, c.shape.head_dim, plan.max_splits, plan.min_chunk,
                      differ, ahead.size(), e);
        }
      }
    }
  }
}

TEST(CudaDecodeAttention, Fp8CacheMatchesTheReferenceWithOtherSplitPlans) {
  PACELINE_REQUIRE_GPU();
  // The last has the long regime from 2k keys on: 9,000 keys are 18 pieces of 512.
  for (cuda::DecodeSplits s : {cuda::DecodeSplits{1, 128}, cuda::DecodeSplits{4, 64},
                               cuda::DecodeSplits{64, 256}, cuda::DecodeSplits{48, 64, 4, 512}}) {
    expect_fp8_matches_bf16({{32, 8, 128}, 16, kShort}, s, 600 + s.max_splits);
    expect_fp8_matches_bf16({{8, 8, 256}, 7, kShort}, s, 700 + s.max_splits);
  }
}

// A row's output bits are the same alone, in any subset or order of rows, and replayed from a
// CUDA graph captured for the whole list; for the bf16 cache and for an FP8 one.
void expect_rows_batch_invariant(bool fp8) {
  std::vector<int> ctx;
  for (int i = 0; i < 64; ++i) ctx.push_back(i % 9 == 4 ? 0 : 1 + (i * 2654435761u) % 20000);
  Problem p({32, 8, 128}, 16, ctx, 99);
  std::vector<uint8_t> k8, v8;
  if (fp8) testing::random_fp8_cache(98, p.k, p.v, k8, v8);
  OnDevice d(p);
  if (fp8) d.use_fp8(k8, v8);
  d.run({});
  const std::vector<uint16_t> all = d.result();
  const size_t per_row = static_cast<size_t>(p.shape.num_heads) * p.shape.head_dim;
  auto same_rows = [&](const std::vector<uint16_t>& got, const std::vector<int32_t>& list,
                       const char* what) {
    for (int32_t r : list) {
      for (size_t i = 0; i < per_row; ++i) {
        if (got[r * per_row + i] != all[r * per_row + i]) {
          ADD_FAILURE() << (fp8 ? "fp8 " : "bf16 ") << what << ": row " << r << " element "
                        << i << " differs";
          return;
        }
      }
    }
  };
  for (int32_t r : {0, 5, 63}) {
    d.run({r});
    same_rows(d.result(), {r}, "alone");
  }
  std::vector<int32_t> reversed;
  for (int32_t r = 63; r >= 0; r -= 3) reversed.push_back(r);
  d.run(reversed);
  same_rows(d.result(), reversed, "reversed subset");

  cudaStream_t stream;
  PACELINE_CUDA_CHECK(cudaStreamCreate(&stream));
  std::vector<int32_t> list(64);
  for (int32_t i = 0; i < 64; ++i) list[i] = i;
  d.list_buf = testing::upload(list);
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  PACELINE_CUDA_CHECK(cudaMemsetAsync(d.out.as<void>(), 0xff, d.out.bytes(), stream));
  PACELINE_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  PACELINE_CUDA_CHECK(cuda::launch_attention_decode(
      d.qkv.as<float>(), d.list_buf.as<int32_t>(), 64, p.splits, p.shape, d.rows.in(), d.cache(),
      d.acc.as<float>(), d.ml.as<float>(), d.out.as<cuda::bf16>(), stream));
  PACELINE_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  PACELINE_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  PACELINE_CUDA_CHECK(cudaGraphLaunch(exec, stream));
  PACELINE_CUDA_CHECK(cudaStreamSynchronize(stream));
  same_rows(d.result(), list, "graph replay");
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
}

// A block that issues its next item's first tiles before merging the current one's warps
// (DecodeSplits::prefetch, PACELINE_DECODE_PREFETCH=1) writes the bits of one that does not, and both match the
// reference: with many more items than blocks (every block takes several, of pieces of every
// length, rows of one piece and padding rows among them), for both caches and the head sizes
// whose stages the merge shares differently.
TEST(CudaDecodeAttention, PrefetchingTheNextItemKeepsTheBits) {
  PACELINE_REQUIRE_GPU();
  std::vector<int> ctx;
  for (int i = 0; i < 64; ++i) ctx.push_back(i % 11 == 3 ? 0 : 1 + (i * 2654435761u) % 5000);
  ctx[7] = 33000;  // FP8's long regime: 32 pieces
  ctx[20] = 129;   // two pieces of 128 and a partial tile
  const std::vector<Case> cases = {
      {{32, 8, 128}, 16, ctx},
      {{8, 8, 256}, 7, kShort},
      {{4, 1, 16}, 16, ctx},
  };
  uint64_t seed = 900;
  for (const bool fp8 : {false, true}) {
    for (const Case& c : cases) {
      Problem p(c.shape, c.block_size, c.ctx, seed++);
      p.splits = fp8 ? cuda::kDecodePlanFp8 : cuda::kDecodePlanBf16;
      std::vector<uint8_t> k8, v8;
      if (fp8) testing::random_fp8_cache(seed, p.k, p.v, k8, v8);
      OnDevice d(p);
      if (fp8) d.use_fp8(k8, v8);
      p.splits.prefetch = false;  // d reads p's plan at each launch
      d.run({});
      const std::vector<uint16_t> without = d.result();
      p.splits.prefetch = true;
      d.run({});
      const std::vector<uint16_t> with = d.result();
      const double e = check_against_reference(p, with);
      size_t differ = 0;
      for (size_t i = 0; i < with.size(); ++i) differ += with[i] != without[i];
      EXPECT_EQ(differ, 0u) << (fp8 ? "fp8" : "bf16") << ", head_dim " << c.shape.head_dim;
      std::printf("[ decode prefetch ] %s, heads %d/%d, head_dim %d: %zu of %zu elements differ "
                  "from no prefetch, worst relative error %.2e\n",
                  fp8 ? "fp8" : "bf16", c.shape.num_heads, c.shape.num_kv_heads,
                  c.shape.head_dim, differ, with.size(), e);
    }
  }
}

TEST(CudaDecodeAttention, RowsAreBatchInvariant) {
  PACELINE_REQUIRE_GPU();
  expect_rows_batch_invariant(false);
}

TEST(CudaDecodeAttention, Fp8RowsAreBatchInvariant) {
  PACELINE_REQUIRE_GPU();
  expect_rows_batch_invariant(true);
}

}  // namespace
}  // namespace paceline

#else
TEST(CudaDecodeAttention, NeedsCudaBuild) { GTEST_SKIP() << "this build has no CUDA"; }
#endif
