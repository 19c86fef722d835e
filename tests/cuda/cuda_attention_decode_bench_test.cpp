// The decode attention's KV bandwidth on one layer of a Qwen3-8B-shaped cache (32 q heads, 8 KV
// heads, head_dim 128, blocks of 16 in shuffled order): bytes of K and V read / kernel time, at
// contexts 1k, 8k, 32k and 128k and batches 1, 4, 16 and 64, for the production plan and pipeline
// and a few others, and for an FP8 (e4m3) cache of the same shape (its bytes are half: the share
// is of the FP8 bytes). Runs only with PACELINE_DECODE_BENCH=1 (it takes 52 GB and a few
// minutes); PACELINE_DECODE_BENCH_ONLY=context,batch[;context,batch...] times those cases alone, production bf16 and
// FP8 only (for ncu); PACELINE_DECODE_BENCH_PRODUCTION=1 times every case, production bf16 and
// FP8 only; PACELINE_DECODE_BENCH_PLANS adds plans and PACELINE_DECODE_BENCH_SHAPE takes
// another shape (below).
// Small cases rotate over several disjoint sets of blocks so that the L2 (60 MB) holds none of a
// launch's keys; each time is a CUDA graph of launches replayed, median of 5 replays, and the
// output's bits hashed (two builds meant to give the same bits compared in one run).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "cuda_test_util.h"

#if PACELINE_HAVE_CUDA
#include "decode_test_util.h"
#include "exec/cuda/cuda_model.h"

namespace paceline {
namespace {

using cuda::DeviceBuffer;

constexpr double kCopyBytesPerSecond = 4.275e12;  // H200 device-to-device (../shared/guide/gpu.md)

// Median milliseconds per launch of `body` (which enqueues `launches` launches on `stream`),
// captured once in a graph.
double time_graph(cudaStream_t stream, int launches, const std::function<void()>& body) {
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  PACELINE_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  body();
  PACELINE_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  PACELINE_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  cudaEvent_t a, b;
  PACELINE_CUDA_CHECK(cudaEventCreate(&a));
  PACELINE_CUDA_CHECK(cudaEventCreate(&b));
  PACELINE_CUDA_CHECK(cudaGraphLaunch(exec, stream));  // warm-up
  std::vector<double> ms;
  for (int i = 0; i < 5; ++i) {
    PACELINE_CUDA_CHECK(cudaEventRecord(a, stream));
    PACELINE_CUDA_CHECK(cudaGraphLaunch(exec, stream));
    PACELINE_CUDA_CHECK(cudaEventRecord(b, stream));
    PACELINE_CUDA_CHECK(cudaEventSynchronize(b));
    float t = 0;
    PACELINE_CUDA_CHECK(cudaEventElapsedTime(&t, a, b));
    ms.push_back(t / launches);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  std::sort(ms.begin(), ms.end());
  return ms[2];
}

struct Config {
  std::string name;
  int warps = 0, stages = 0;  // 0: the production launcher
  cuda::DecodeSplits splits = cuda::kDecodePlanBf16;
  bool fp8 = false;  // the FP8 cache (production launcher)
};

// A plan with the next-item prefetch set (DecodeSplits::prefetch).
cuda::DecodeSplits with_prefetch(cuda::DecodeSplits s, bool prefetch) {
  s.prefetch = prefetch;
  return s;
}

// And with one of the kernel's switches set: the FP8 tiles' bulk copies (DecodeSplits::fp8_bulk),
// the next item's q loaded during the merge (q_next), the FP8 block-table lead (fp8_table_lead).
cuda::DecodeSplits with_switch(cuda::DecodeSplits s, bool prefetch,
                               bool cuda::DecodeSplits::*which, bool on) {
  s.prefetch = prefetch;
  s.*which = on;
  return s;
}

TEST(CudaDecodeAttentionBench, KvBandwidth) {
  PACELINE_REQUIRE_GPU();
  if (std::getenv("PACELINE_DECODE_BENCH") == nullptr) {
    GTEST_SKIP() << "set PACELINE_DECODE_BENCH=1 to time the decode attention";
  }
  // PACELINE_DECODE_BENCH_SHAPE="HEADS,KV_HEADS,HEAD_DIM": another shape, e.g. 4,1,128 (one KV
  // head) or 64,8,128 (groups of 8). Since the cache is head-major inside each block (session
  // 31) a tile's 16 keys are one contiguous run in every shape.
  cuda::AttentionShape shape{32, 8, 128};
  if (const char* given = std::getenv("PACELINE_DECODE_BENCH_SHAPE")) {
    ASSERT_EQ(std::sscanf(given, "%d,%d,%d", &shape.num_heads, &shape.num_kv_heads,
                          &shape.head_dim),
              3)
        << "PACELINE_DECODE_BENCH_SHAPE=" << given << ": expected HEADS,KV_HEADS,HEAD_DIM";
    ASSERT_TRUE(cuda::decode_attention_supported(shape))
        << "PACELINE_DECODE_BENCH_SHAPE=" << given << ": a shape the decode attention takes";
  }
  std::printf("[ bench ] shape: %d heads, %d KV heads, head_dim %d\n", shape.num_heads,
              shape.num_kv_heads, shape.head_dim);
  const int bs = 16;
  const int64_t token_bytes = 2LL * shape.num_kv_heads * shape.head_dim * 2;  // K and V, bf16
  const int64_t pool_tokens = 64LL * 131072 + 4096;
  const int64_t pool_blocks = pool_tokens / bs;
  const size_t half = static_cast<size_t>(pool_tokens * token_bytes / 2);
  DeviceBuffer k(half), v(half);
  {  // 64 MB of random bf16, repeated over the pool: real data, never zeros.
    std::vector<uint16_t> chunk(32u << 20);
    testing::FastRandom rng(5);
    for (uint16_t& x : chunk) x = testing::bf16_bits(rng.uniform());
    const size_t cb = chunk.size() * 2;
    DeviceBuffer src = testing::upload(chunk);
    for (size_t at = 0; at < half; at += cb) {
      PACELINE_CUDA_CHECK(cudaMemcpy(k.as<char>() + at, src.as<void>(), std::min(cb, half - at),
                                     cudaMemcpyDeviceToDevice));
      PACELINE_CUDA_CHECK(cudaMemcpy(v.as<char>() + at, src.as<void>(), std::min(cb, half - at),
                                     cudaMemcpyDeviceToDevice));
    }
  }
  // The FP8 cache: 32 MB of random e4m3 bytes of magnitude below 2 (no NaN), repeated likewise.
  DeviceBuffer k8(half / 2), v8(half / 2);
  {
    std::vector<uint16_t> widened(32u << 20), unused(32u << 20);
    std::vector<uint8_t> chunk8, other8;
    testing::random_fp8_cache(6, widened, unused, chunk8, other8);
    DeviceBuffer src = testing::upload(chunk8);
    const size_t cb = chunk8.size();
    for (size_t at = 0; at < half / 2; at += cb) {
      PACELINE_CUDA_CHECK(cudaMemcpy(k8.as<char>() + at, src.as<void>(),
                                     std::min(cb, half / 2 - at), cudaMemcpyDeviceToDevice));
      PACELINE_CUDA_CHECK(cudaMemcpy(v8.as<char>() + at, src.as<void>(),
                                     std::min(cb, half / 2 - at), cudaMemcpyDeviceToDevice));
    }
  }
  const auto plan_name = [](cuda::DecodeSplits p) {
    return std::to_string(p.max_splits) + " x >=" + std::to_string(p.min_chunk);
  };
  // The production rows and PACELINE_DECODE_BENCH_PLANS' take PACELINE_DECODE_PREFETCH's choice.
  std::string prefetch_error;
  const std::optional<bool> prefetch =
      cuda::decode_prefetch_from(std::getenv("PACELINE_DECODE_PREFETCH"), &prefetch_error);
  ASSERT_TRUE(prefetch.has_value()) << prefetch_error;
  std::vector<Config> configs = {
      {"production (4 warps, 2 stages, " + plan_name(cuda::kDecodePlanBf16) + ")", 0, 0,
       with_prefetch(cuda::kDecodePlanBf16, *prefetch)},
      {"fp8 production (4 warps, 4 stages, " + plan_name(cuda::kDecodePlanFp8) + ")", 0, 0,
       with_prefetch(cuda::kDecodePlanFp8, *prefetch), true},
      // The production kernels with and without the next item's first tiles issued before the
      // merge (PACELINE_DECODE_PREFETCH), whatever the variable says, side by side.
      {"production, prefetch 0", 0, 0, with_prefetch(cuda::kDecodePlanBf16, false)},
      {"production, prefetch 1", 0, 0, with_prefetch(cuda::kDecodePlanBf16, true)},
      {"fp8 production, prefetch 0", 0, 0, with_prefetch(cuda::kDecodePlanFp8, false), true},
      {"fp8 production, prefetch 1", 0, 0, with_prefetch(cuda::kDecodePlanFp8, true), true},
      // The FP8 kernel's tiles copied by the threads and in bulk (PACELINE_DECODE_FP8_BULK),
      // side by side.
      {"fp8 production, bulk 0", 0, 0, with_switch(cuda::kDecodePlanFp8, *prefetch, &cuda::DecodeSplits::fp8_bulk, false), true},
      {"fp8 production, bulk 1", 0, 0, with_switch(cuda::kDecodePlanFp8, *prefetch, &cuda::DecodeSplits::fp8_bulk, true), true},
      // The FP8 kernel's block-table entries a turn ahead and kDecodeTableLead turns ahead
      // (PACELINE_DECODE_FP8_TABLE_LEAD), side by side.
      {"fp8 production, table lead 0", 0, 0,
       with_switch(cuda::kDecodePlanFp8, *prefetch, &cuda::DecodeSplits::fp8_table_lead, false), true},
      {"fp8 production, table lead 1", 0, 0,
       with_switch(cuda::kDecodePlanFp8, *prefetch, &cuda::DecodeSplits::fp8_table_lead, true), true},
      // q loaded at an item's start and during the item before's merge (PACELINE_DECODE_Q_NEXT).
      {"production, q next 0", 0, 0, with_switch(cuda::kDecodePlanBf16, *prefetch, &cuda::DecodeSplits::q_next, false)},
      {"production, q next 1", 0, 0, with_switch(cuda::kDecodePlanBf16, *prefetch, &cuda::DecodeSplits::q_next, true)},
      {"fp8 production, q next 0", 0, 0, with_switch(cuda::kDecodePlanFp8, *prefetch, &cuda::DecodeSplits::q_next, false),
       true},
      {"fp8 production, q next 1", 0, 0, with_switch(cuda::kDecodePlanFp8, *prefetch, &cuda::DecodeSplits::q_next, true),
       true},
      {"4 warps, 3 stages", 4, 3, cuda::kDecodePlanBf16},
      {"plan 32 x >=128", 0, 0, {32, 128}},
      {"plan 16 x >=256", 0, 0, {16, 256}},
  };
  // PACELINE_DECODE_BENCH_PLANS="MAX,MIN;MAX,MIN;...": those plans too, bf16 and FP8, timed with
  // the production ones (also under PACELINE_DECODE_BENCH_PRODUCTION).
  int most_splits = 64;
  if (const char* plans = std::getenv("PACELINE_DECODE_BENCH_PLANS")) {
    std::string all = plans;
    for (size_t at = 0; at <= all.size();) {
      const size_t end = std::min(all.find(';', at), all.size());
      std::string error;
      const std::optional<cuda::DecodeSplits> p =
          cuda::decode_splits_from(all.substr(at, end - at).c_str(), false, &error);
      ASSERT_TRUE(p.has_value()) << error;
      configs.push_back({"production plan " + plan_name(*p), 0, 0, with_prefetch(*p, *prefetch)});
      configs.push_back(
          {"fp8 production plan " + plan_name(*p), 0, 0, with_prefetch(*p, *prefetch), true});
      most_splits = std::max(most_splits, p->max_splits);
      at = end + 1;
    }
  }
  // PACELINE_DECODE_BENCH_ONLY="CTX,BATCH" or a list "CTX,BATCH;CTX,BATCH;...".
  std::vector<std::pair<int, int>> only;
  if (const char* list = std::getenv("PACELINE_DECODE_BENCH_ONLY")) {
    for (const char* p = list; *p != 0;) {
      int ctx = 0, batch = 0;
      ASSERT_EQ(std::sscanf(p, "%d,%d", &ctx, &batch), 2) << list;
      only.emplace_back(ctx, batch);
      const char* next = std::strchr(p, ';');
      if (next == nullptr) break;
      p = next + 1;
    }
  }
  const bool only_some = !only.empty();
  const bool production_only = std::getenv("PACELINE_DECODE_BENCH_PRODUCTION") != nullptr;
  cudaStream_t stream;
  PACELINE_CUDA_CHECK(cudaStreamCreate(&stream));
  std::printf("[ bench ] | context | batch | config | KV GB | us per launch | TB/s | "
              "%% of 4.275 TB/s | output bits |\n");
  for (int ctx : {1024, 8192, 32768, 131072}) {
    for (int batch : {1, 4, 16, 64}) {
      if (only_some && std::find(only.begin(), only.end(), std::make_pair(ctx, batch)) == only.end()) {
        continue;
      }
      const double bytes = static_cast<double>(batch) * ctx * token_bytes;
      const int rot = static_cast<int>(std::clamp(2e9 / bytes, 1.0, 32.0));
      const int launches = std::max(rot, bytes > 4e9 ? 3 : 10);
      std::vector<int> contexts(static_cast<size_t>(rot) * batch, ctx);
      std::vector<std::vector<int32_t>> tables;
      ASSERT_TRUE(testing::shuffled_tables(contexts, bs, pool_blocks, ctx + batch, tables));
      testing::DecodeRows rows(contexts, tables);
      const int width = (shape.num_heads + 2 * shape.num_kv_heads) * shape.head_dim;
      std::vector<float> q(contexts.size() * static_cast<size_t>(width));
      testing::FastRandom rng(7);
      for (float& x : q) x = 4.0f * rng.uniform();
      DeviceBuffer qkv = testing::upload(q);
      const size_t parts = static_cast<size_t>(batch) * shape.num_heads * most_splits;
      DeviceBuffer acc(parts * shape.head_dim * 4), ml(parts * 8);
      DeviceBuffer out(contexts.size() * static_cast<size_t>(shape.num_heads) * shape.head_dim * 2);
      const cuda::LayerCache bf16_cache{k.as<cuda::bf16>(), v.as<cuda::bf16>(), bs};
      // Its size said, for the bulk copies.
      const cuda::LayerCache fp8_cache = testing::fp8_layer_cache(k8, v8, bs, pool_tokens);
      for (const Config& c : configs) {
        if ((only_some || production_only) && c.name.find("production") == std::string::npos) {
          continue;
        }
        if (c.warps != 0 && shape.head_dim != 128) continue;  // the variants are head_dim 128's
        const cuda::LayerCache& cache = c.fp8 ? fp8_cache : bf16_cache;
        const double read = c.fp8 ? bytes / 2 : bytes;  // an e4m3 element is one byte
        auto enqueue = [&] {
          for (int i = 0; i < launches; ++i) {
            const int32_t* list = rows.rows.as<int32_t>() + (i % rot) * batch;
            if (c.warps == 0) {
              PACELINE_CUDA_CHECK(cuda::launch_attention_decode(
                  qkv.as<float>(), list, batch, c.splits, shape, rows.in(), cache,
                  acc.as<float>(), ml.as<float>(), out.as<cuda::bf16>(), stream));
            } else {
              PACELINE_CUDA_CHECK(cuda::launch_attention_decode_variant(
                  c.warps, c.stages, qkv.as<float>(), list, batch, c.splits, shape, rows.in(),
                  cache, acc.as<float>(), ml.as<float>(), out.as<cuda::bf16>(), stream));
            }
          }
        };
        const double t = time_graph(stream, launches, enqueue);
        const double tbs = read / (t * 1e-3) / 1e12;
        // Every rotation's rows have been written (launches >= rot): their bits, hashed.
        const uint64_t bits = testing::bits_hash(testing::download<uint16_t>(out, out.bytes() / 2));
        std::printf("[ bench ] | %d | %d | %s | %.3f | %.1f | %.2f | %.0f%% | %016llx |\n", ctx,
                    batch, c.name.c_str(), read / 1e9, t * 1e3, tbs,
                    100.0 * tbs * 1e12 / kCopyBytesPerSecond,
                    static_cast<unsigned long long>(bits));
        std::fflush(stdout);
      }
    }
  }
  cudaStreamDestroy(stream);
}

}  // namespace
}  // namespace paceline

#else
TEST(CudaDecodeAttentionBench, NeedsCudaBuild) { GTEST_SKIP() << "this build has no CUDA"; }
#endif
