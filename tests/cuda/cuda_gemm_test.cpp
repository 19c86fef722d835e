// The projections' GEMM: one call over many rows gives, bit for bit, what one call per 128 rows
// gives, on the shapes of Qwen3-8B (so a row's bits never depend on how many rows share its
// step, whichever way the GEMM is cut; split-K's workspace cuts a long call into several). With
// PACELINE_GEMM_BENCH=1 both ways are timed at 8,192 and 32,768 rows, and each of cuBLASLt's
// candidate algorithms for the 128-row chunk is timed at 128 rows (decode) and 8,192 (prefill).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "cuda_test_util.h"

#if PACELINE_HAVE_CUDA
#include <cublasLt.h>

#include "decode_test_util.h"
#include "exec/cuda/gemm.h"

namespace paceline {
namespace {

using cuda::DeviceBuffer;

struct Shape {
  const char* name;
  int64_t k, n;
  float beta;  // 1: the residual is accumulated into y
};

// Qwen3-8B: hidden 4096, 32 + 2 * 8 heads of 128, intermediate 12288, vocabulary 151,936.
const std::vector<Shape> kShapes = {
    {"qkv_proj", 4096, 6144, 0.0f},       {"o_proj", 4096, 4096, 1.0f},
    {"gate_up_proj", 4096, 24576, 0.0f}, {"down_proj", 12288, 4096, 1.0f},
    {"lm_head", 4096, 151936, 0.0f},
};

std::vector<uint16_t> random_bf16(size_t n, uint64_t seed) {
  std::vector<uint16_t> v(n);
  testing::FastRandom rng(seed);
  for (uint16_t& x : v) x = testing::bf16_bits(rng.uniform());
  return v;
}

struct Operands {
  DeviceBuffer x, w, y0, y;
  Operands(const Shape& s, int64_t rows, uint64_t seed)
      : x(testing::upload(random_bf16(static_cast<size_t>(rows * s.k), seed))),
        w(testing::upload(random_bf16(static_cast<size_t>(s.n * s.k), seed + 1))),
        y0(static_cast<size_t>(rows * s.n) * sizeof(float)),
        y(static_cast<size_t>(rows * s.n) * sizeof(float)) {
    std::vector<float> r(static_cast<size_t>(rows * s.n));
    testing::FastRandom rng(seed + 2);
    for (float& f : r) f = rng.uniform();
    y0 = testing::upload(r);
  }
  // y = y0 (the residual), then the GEMM with the shape's beta.
  std::vector<float> run(cuda::Gemm& g, const Shape& s, int64_t rows) {
    PACELINE_CUDA_CHECK(cudaMemcpy(y.as<void>(), y0.as<void>(), y.bytes(), cudaMemcpyDeviceToDevice));
    g.run_f32(x.as<cuda::bf16>(), rows, s.k, w.as<cuda::bf16>(), s.n, y.as<float>(), s.beta);
    PACELINE_CUDA_CHECK(cudaDeviceSynchronize());
    return testing::download<float>(y, static_cast<size_t>(rows * s.n));
  }
};

// Both algorithms: the prefill rows' (the default for a call without decode rows) and the
// decode rows' (set_prefill_plan(false) sends every row to it).
TEST(CudaGemm, OneCallOverManyRowsGivesTheChunkedBits) {
  PACELINE_REQUIRE_GPU();
  cuda::Gemm g(nullptr);
  uint64_t seed = 1;
  for (bool prefill : {true, false}) {
    g.set_prefill_plan(prefill);
    for (const Shape& s : kShapes) {
      std::printf("[ gemm ] %s, %s rows' algorithm: %s\n", s.name, prefill ? "prefill" : "decode",
                  g.describe(s.k, s.n, s.beta != 0.0f, prefill).c_str());
      // 4,096 rows take several calls where split-K's workspace limits a call's rows.
      for (int64_t rows : {256, 1024, 4096}) {
        if (s.n > 30000 && rows > 1024) continue;  // lm_head runs on the sampled rows only
        Operands op(s, rows, seed += 3);
        g.set_single_call(false);
        const std::vector<float> chunked = op.run(g, s, rows);
        g.set_single_call(true);
        const std::vector<float> whole = op.run(g, s, rows);
        size_t differ = 0;
        for (size_t i = 0; i < whole.size(); ++i) differ += whole[i] != chunked[i] ? 1 : 0;
        EXPECT_EQ(differ, 0u) << s.name << ", " << rows << " rows";
      }
    }
  }
}

// A mixed call (cuBLASLt for decode rows too, as with --max-num-seqs above 32): its first rows,
// the decode rows, get the bits of a call of decode rows alone, and the prefill rows the bits of
// a call of prefill rows alone from row 0; with beta 1 too (the decode rows' call is then not
// padded into the prefill rows, whose residual it would add to). 300 prefill rows and 1 or 7
// decode rows.
TEST(CudaGemm, DecodeAndPrefillRowsOfAMixedCallKeepTheirBits) {
  PACELINE_REQUIRE_GPU();
  cuda::Gemm g(nullptr);
  g.set_small_m(false);
  constexpr int64_t kPrefill = 300;
  uint64_t seed = 100;
  for (const Shape& s : kShapes) {
    if (s.n > 30000) continue;  // lm_head: logit rows are all decode rows
    for (int64_t decode : {1, 7}) {
      const int64_t rows = decode + kPrefill;
      const int64_t cap = cuda::gemm_buffer_rows(rows);
      const std::vector<uint16_t> hx = random_bf16(static_cast<size_t>(rows * s.k), seed += 3);
      std::vector<float> hy0(static_cast<size_t>(rows * s.n));
      testing::FastRandom rng(seed + 1);
      for (float& f : hy0) f = rng.uniform();
      DeviceBuffer w = testing::upload(random_bf16(static_cast<size_t>(s.n * s.k), seed + 2));
      DeviceBuffer x(static_cast<size_t>(cap * s.k) * 2), y(static_cast<size_t>(cap * s.n) * 4);
      // Runs the call on rows [from, from + count) of hx/hy0 placed at row 0, with `small` decode
      // rows; returns its count rows of y.
      const auto call = [&](int64_t from, int64_t count, int64_t small) {
        PACELINE_CUDA_CHECK(cudaMemset(x.as<void>(), 0, x.bytes()));
        PACELINE_CUDA_CHECK(cudaMemcpy(x.as<void>(), hx.data() + from * s.k,
                                       static_cast<size_t>(count * s.k) * 2,
                                       cudaMemcpyHostToDevice));
        PACELINE_CUDA_CHECK(cudaMemcpy(y.as<void>(), hy0.data() + from * s.n,
                                       static_cast<size_t>(count * s.n) * 4,
                                       cudaMemcpyHostToDevice));
        g.run_f32(x.as<cuda::bf16>(), count, s.k, w.as<cuda::bf16>(), s.n, y.as<float>(), s.beta,
                  small);
        PACELINE_CUDA_CHECK(cudaDeviceSynchronize());
        return testing::download<float>(y, static_cast<size_t>(count * s.n));
      };
      const std::vector<float> mixed = call(0, rows, decode);
      const std::vector<float> decode_alone = call(0, decode, decode);
      const std::vector<float> prefill_alone = call(decode, kPrefill, 0);
      EXPECT_EQ(std::memcmp(mixed.data(), decode_alone.data(), decode_alone.size() * 4), 0)
          << s.name << ", " << decode << " decode rows";
      EXPECT_EQ(std::memcmp(mixed.data() + decode * s.n, prefill_alone.data(),
                            prefill_alone.size() * 4),
                0)
          << s.name << ", " << decode << " decode rows";
    }
  }
}

TEST(CudaGemmBench, WholeAgainstChunked) {
  PACELINE_REQUIRE_GPU();
  if (std::getenv("PACELINE_GEMM_BENCH") == nullptr) {
    GTEST_SKIP() << "set PACELINE_GEMM_BENCH=1 to time the GEMMs";
  }
  cuda::Gemm g(nullptr);
  cudaEvent_t a, b;
  PACELINE_CUDA_CHECK(cudaEventCreate(&a));
  PACELINE_CUDA_CHECK(cudaEventCreate(&b));
  for (int64_t rows : {8192, 32768}) {
    for (const Shape& s : kShapes) {
      if (s.n > 30000 && rows > 8192) continue;  // lm_head runs on the last rows only
      Operands op(s, rows, 7);
      // Chunks of 128 rows and one call by the decode rows' algorithm, one call by the prefill
      // rows' algorithm.
      for (int way = 0; way < 3; ++way) {
        const bool whole = way > 0;
        g.set_single_call(whole);
        g.set_prefill_plan(way == 2);
        std::vector<float> ms;
        for (int i = 0; i < 4; ++i) {
          PACELINE_CUDA_CHECK(cudaEventRecord(a));
          g.run_f32(op.x.as<cuda::bf16>(), rows, s.k, op.w.as<cuda::bf16>(), s.n, op.y.as<float>(),
                    s.beta);
          PACELINE_CUDA_CHECK(cudaEventRecord(b));
          PACELINE_CUDA_CHECK(cudaEventSynchronize(b));
          float m = 0;
          PACELINE_CUDA_CHECK(cudaEventElapsedTime(&m, a, b));
          if (i > 0) ms.push_back(m);
        }
        std::sort(ms.begin(), ms.end());
        const double t = ms[ms.size() / 2];
        std::printf("[ gemm bench ] %s, %lld rows, %s: %.3f ms, %.0f TFLOP/s\n", s.name,
                    static_cast<long long>(rows),
                    way == 0   ? "chunks of 128"
                    : way == 1 ? "one call, decode rows' algorithm"
                               : "one call, prefill rows' algorithm",
                    t,
                    2.0 * rows * s.k * s.n / t / 1e9);
      }
    }
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
}


// Every candidate the heuristic offers for the 128-row chunk (index 0 is the one Gemm keeps),
// timed at 128 rows and, where its workspace allows one call, at 8,192.
TEST(CudaGemmBench, CandidatesAtDecodeAndPrefillRows) {
  PACELINE_REQUIRE_GPU();
  if (std::getenv("PACELINE_GEMM_BENCH") == nullptr) {
    GTEST_SKIP() << "set PACELINE_GEMM_BENCH=1 to time the GEMMs";
  }
  cublasLtHandle_t handle = nullptr;
  ASSERT_EQ(cublasLtCreate(&handle), CUBLAS_STATUS_SUCCESS);
  DeviceBuffer workspace(size_t{64} << 20);
  cudaEvent_t a, b;
  PACELINE_CUDA_CHECK(cudaEventCreate(&a));
  PACELINE_CUDA_CHECK(cudaEventCreate(&b));
  for (const Shape& s : kShapes) {
    constexpr int64_t kPrefillRows = 8192;
    struct {
      DeviceBuffer x, w, y;
    } op{DeviceBuffer(static_cast<size_t>(kPrefillRows * s.k) * 2),
         DeviceBuffer(static_cast<size_t>(s.n * s.k) * 2),
         DeviceBuffer(static_cast<size_t>(kPrefillRows * s.n) * sizeof(float))};
    PACELINE_CUDA_CHECK(cudaMemset(op.x.as<void>(), 0x3c, op.x.bytes()));
    PACELINE_CUDA_CHECK(cudaMemset(op.w.as<void>(), 0x3b, op.w.bytes()));
    PACELINE_CUDA_CHECK(cudaMemset(op.y.as<void>(), 0, op.y.bytes()));
    cublasLtMatmulDesc_t desc = nullptr;
    ASSERT_EQ(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), CUBLAS_STATUS_SUCCESS);
    const cublasOperation_t transpose = CUBLAS_OP_T, none = CUBLAS_OP_N;
    cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &transpose, sizeof transpose);
    cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &none, sizeof none);
    auto layout = [](cudaDataType_t t, int64_t r, int64_t c) {
      cublasLtMatrixLayout_t l = nullptr;
      cublasLtMatrixLayoutCreate(&l, t, static_cast<uint64_t>(r), static_cast<uint64_t>(c), r);
      return l;
    };
    cublasLtMatrixLayout_t lw = layout(CUDA_R_16BF, s.k, s.n);
    cublasLtMatrixLayout_t lx128 = layout(CUDA_R_16BF, s.k, 128), ly128 = layout(CUDA_R_32F, s.n, 128);
    cublasLtMatrixLayout_t lxp = layout(CUDA_R_16BF, s.k, kPrefillRows);
    cublasLtMatrixLayout_t lyp = layout(CUDA_R_32F, s.n, kPrefillRows);
    cublasLtMatmulPreference_t pref = nullptr;
    cublasLtMatmulPreferenceCreate(&pref);
    const uint64_t wbytes = workspace.bytes();
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wbytes,
                                         sizeof wbytes);
    auto time = [&](const cublasLtMatmulAlgo_t& algo, cublasLtMatrixLayout_t lx,
                    cublasLtMatrixLayout_t ly) {
      const float alpha = 1.0f;
      std::vector<float> ms;
      for (int i = 0; i < 6; ++i) {
        PACELINE_CUDA_CHECK(cudaEventRecord(a));
        const cublasStatus_t st = cublasLtMatmul(handle, desc, &alpha, op.w.as<void>(), lw, op.x.as<void>(), lx,
                                                 &s.beta, op.y.as<void>(), ly, op.y.as<void>(), ly, &algo,
                                                 workspace.as<void>(), workspace.bytes(), nullptr);
        PACELINE_CUDA_CHECK(cudaEventRecord(b));
        PACELINE_CUDA_CHECK(cudaEventSynchronize(b));
        if (st != CUBLAS_STATUS_SUCCESS) return -1.0;
        float m = 0;
        PACELINE_CUDA_CHECK(cudaEventElapsedTime(&m, a, b));
        if (i > 0) ms.push_back(m);
      }
      std::sort(ms.begin(), ms.end());
      return static_cast<double>(ms[ms.size() / 2]);
    };
    // The heuristic's candidates for 128 rows (the decode rows' algorithm is its first), then
    // for 8,192 (the prefill rows').
    for (const int64_t heuristic_rows : {int64_t{128}, kPrefillRows}) {
    cublasLtMatmulHeuristicResult_t results[16]{};
    int found = 0;
    cublasLtMatmulAlgoGetHeuristic(handle, desc, lw, heuristic_rows == 128 ? lx128 : lxp,
                                   heuristic_rows == 128 ? ly128 : lyp,
                                   heuristic_rows == 128 ? ly128 : lyp, pref, 16, results, &found);
    for (int c = 0; c < found; ++c) {
      const cublasLtMatmulAlgo_t& algo = results[c].algo;
      auto get = [&](cublasLtMatmulAlgoConfigAttributes_t attr) {
        uint32_t v = 0;
        size_t written = 0;
        cublasLtMatmulAlgoConfigGetAttribute(&algo, attr, &v, sizeof v, &written);
        return v;
      };
      const double t128 = time(algo, lx128, ly128);
      cublasLtMatmulHeuristicResult_t check{};
      const bool whole = cublasLtMatmulAlgoCheck(handle, desc, lw, lxp, lyp, lyp, &algo, &check) ==
                             CUBLAS_STATUS_SUCCESS &&
                         check.workspaceSize <= workspace.bytes();
      const double tp = whole ? time(algo, lxp, lyp) : -1.0;
      std::printf("[ gemm candidates ] %s, heuristic at %lld rows #%d algo %u tile %u stages %u "
                  "split-k %u: 128 rows %.4f ms (%.0f GB/s of weights), 8192 rows %.3f ms (%.0f "
                  "TFLOP/s)\n",
                  s.name, static_cast<long long>(heuristic_rows), c, get(CUBLASLT_ALGO_CONFIG_ID), get(CUBLASLT_ALGO_CONFIG_TILE_ID),
                  get(CUBLASLT_ALGO_CONFIG_STAGES_ID), get(CUBLASLT_ALGO_CONFIG_SPLITK_NUM), t128,
                  2.0 * s.k * s.n / t128 / 1e6, tp, tp > 0 ? 2.0 * kPrefillRows * s.k * s.n / tp / 1e9 : 0.0);
    }
    }
    cublasLtMatmulPreferenceDestroy(pref);
    for (cublasLtMatrixLayout_t l : {lw, lx128, ly128, lxp, lyp}) cublasLtMatrixLayoutDestroy(l);
    cublasLtMatmulDescDestroy(desc);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  cublasLtDestroy(handle);
}


}  // namespace
}  // namespace paceline

#else
TEST(CudaGemm, NeedsCudaBuild) { GTEST_SKIP() << "this build has no CUDA"; }
#endif
