// FP8 prefill attention (--prefill-attention-dtype fp8, attention_prefill_fp8.cu) against a
// double-precision reference: the Qwen3-8B shape and odd ones (rows not a multiple of the tile,
// cached prefixes, blocks of 16, 7 and 1 keys in shuffled order), from a bf16 and from an FP8
// cache. Two figures per case, printed for docs/cuda.md:
// - against the exact reference: the accuracy cost of FP8 (q, K, P and V each rounded to e4m3,
//   3 mantissa bits: about 3% rms each on random data);
// - against the reference on the kernel's own e4m3 operands: what is left is P's rounding and the
//   output's, so a misplaced fragment or key shows here at once.
// A row's bits do not depend on the tiling or on the other sequences of the step, and the
// whole-model logits on the fixtures stay close to HF and to the bf16-attention run.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "../cpu_forward/test_model.h"
#include "cuda_test_util.h"
#include "model/config.h"
#include "model/safetensors.h"
#include "model/weights.h"

#if PACELINE_HAVE_CUDA
#include "exec/cuda/attention_prefill_fp8.cuh"
#include "prefill_problem.h"

namespace paceline {
namespace {

using cuda::AttentionShape;
using cuda::DeviceBuffer;
using cuda::PrefillPrecision;
using testing::Chunk;
using Problem = testing::PrefillProblem;
using OnDevice = testing::PrefillOnDevice;

// Per row, ||out - ref|| / ||ref||. Against the exact reference: e4m3 rounds to within 2^-4
// relative (about 3% rms per element); the scores (q . k over head_dim products, each with two
// roundings) move by about 0.1 on this data, so the weights by about 10%, and the output of a row
// by up to about 10% rms; 0.25 bounds the worst row. On the kernel's own operands only P's
// rounding (3%) and the output's bf16 (0.4%) are left.
constexpr double kExactTolerance = 0.25;
constexpr double kOperandTolerance = 0.08;

const std::vector<Chunk> kChunks = {{0, 1},   {0, 37}, {100, 50}, {1000, 129},
                                    {0, 300}, {31, 1}, {64, 64},  {4000, 3}};

struct Case {
  AttentionShape shape;
  int block_size;
};
const std::vector<Case> kCases = {
    {{32, 8, 128}, 16},  // Qwen3-8B
    {{32, 4, 128}, 7},   // group 8, blocks of 7
    {{16, 8, 128}, 1},   // group 2, one key per block
    {{8, 1, 64}, 7},     // group 8, head_dim 64
    {{4, 2, 32}, 16},    // the tiny YaRN fixture's shape
    {{4, 1, 16}, 16},    // the tiny Llama fixture's (q . k padded to 32 dims)
};

// A case's problem on the device, with a bf16 cache or an FP8 one (random e4m3 values, the bf16
// cache holding the same values).
struct CaseOnDevice {
  std::vector<uint8_t> k8, v8;  // before p, which fills them
  Problem p;
  OnDevice d;
  DeviceBuffer dk, dv;
  cuda::LayerCache cache;

  CaseOnDevice(const Case& c, bool fp8_cache, uint64_t seed)
      : p(with_fp8_values(Problem(c.shape, c.block_size, kChunks, seed), fp8_cache, seed, k8, v8)),
        d(p),
        dk(testing::upload(k8)),
        dv(testing::upload(v8)),
        cache(fp8_cache ? testing::fp8_layer_cache(dk, dv, p.block_size) : d.bf16_cache()) {}

  static Problem with_fp8_values(Problem p, bool fp8_cache, uint64_t seed,
                                 std::vector<uint8_t>& k8, std::vector<uint8_t>& v8) {
    if (fp8_cache) testing::random_fp8_cache(seed, p.k, p.v, k8, v8);
    return p;
  }
};

const char* cache_name(bool fp8) { return fp8 ? "fp8 cache" : "bf16 cache"; }

// The case, before its launches, flushed: a kernel that never returns names its case (the rest
// of the line follows once the case is done).
void announce(const Case& c, bool fp8_cache, const char* what = "") {
  std::printf("[ fp8 prefill ] %sheads %d/%d, head_dim %d, block %d, %s: ", what,
              c.shape.num_heads, c.shape.num_kv_heads, c.shape.head_dim, c.block_size,
              cache_name(fp8_cache));
  std::fflush(stdout);
}

TEST(CudaFp8PrefillAttention, CoversTheQwen3AndFixtureShapes) {
  for (const Case& c : kCases) EXPECT_TRUE(cuda::prefill_attention_fp8_supported(c.shape));
  EXPECT_FALSE(cuda::prefill_attention_fp8_supported({8, 1, 256}));  // stays bf16
  EXPECT_EQ(cuda::prefill_tile_rows({32, 8, 128}, PrefillPrecision::fp8), 32);
}

TEST(CudaFp8PrefillAttention, MatchesReferenceWithinE4m3Rounding) {
  PACELINE_REQUIRE_GPU();
  uint64_t seed = 500;
  for (const Case& c : kCases) {
    for (const bool fp8_cache : {false, true}) {
      CaseOnDevice setup(c, fp8_cache, seed++);
      const Problem& p = setup.p;
      OnDevice& d = setup.d;
      const cuda::LayerCache& cache = setup.cache;
      announce(c, fp8_cache);
      const std::vector<uint16_t> got = d.run(0, &cache, PrefillPrecision::fp8);
      const std::vector<uint16_t> bf16_got = d.run(0, &cache);
      const std::vector<std::vector<double>> ref = p.references();
      const testing::RowErrors exact = testing::row_errors(p, ref, got, kExactTolerance);
      const testing::RowErrors operands =
          testing::row_errors(p, p.references(true), got, kOperandTolerance);
      const testing::RowErrors bf16 =
          testing::row_errors(p, ref, bf16_got, testing::kBf16Tolerance);
      std::printf("relative error per row vs exact worst %.2e rms %.2e (bf16 attention: %.2e, "
                  "%.2e); vs the e4m3 operands worst %.2e rms %.2e\n",
                  exact.worst, exact.rms, bf16.worst, bf16.rms, operands.worst, operands.rms);
    }
  }
}

// A row's bits are the same in tiles of any size and whether its sequence is computed alone or
// with the others of the step.
TEST(CudaFp8PrefillAttention, RowBitsDoNotDependOnTheBatch) {
  PACELINE_REQUIRE_GPU();
  uint64_t seed = 600;
  for (const Case& c : kCases) {
    for (const bool fp8_cache : {false, true}) {
      CaseOnDevice setup(c, fp8_cache, seed++);
      const Problem& p = setup.p;
      OnDevice& d = setup.d;
      const cuda::LayerCache& cache = setup.cache;
      announce(c, fp8_cache, "bits, ");
      const std::vector<uint16_t> full = d.run(0, &cache, PrefillPrecision::fp8);
      for (int n : {1, 5}) {
        EXPECT_EQ(testing::count_differing(d.run(n, &cache, PrefillPrecision::fp8), full), 0u)
            << "tiles of " << n << " rows, head_dim " << c.shape.head_dim << ", "
            << cache_name(fp8_cache);
      }
      const size_t per_row = static_cast<size_t>(c.shape.num_heads) * c.shape.head_dim;
      size_t first = 0;
      for (size_t seq = 0; seq < p.seqs.size(); ++seq) {
        const std::vector<uint16_t> alone =
            d.run(0, &cache, PrefillPrecision::fp8, static_cast<int>(seq));
        const size_t rows = static_cast<size_t>(p.seqs[seq].rows);
        const std::vector<uint16_t> a(alone.begin() + first * per_row,
                                      alone.begin() + (first + rows) * per_row);
        const std::vector<uint16_t> b(full.begin() + first * per_row,
                                      full.begin() + (first + rows) * per_row);
        EXPECT_EQ(testing::count_differing(a, b), 0u)
            << "sequence " << seq << " alone, head_dim " << c.shape.head_dim << ", "
            << cache_name(fp8_cache);
        first += rows;
      }
      std::printf("done\n");
    }
  }
}

// The model fixtures through the CUDA executor, prompts prefilled in chunks of 13 (the prefill
// kernel reads the cached prefix), with FP8 and with bf16 prefill attention, from a bf16 and from
// an FP8 cache: every position's logits against HF's and against the bf16-attention run.
class CudaFp8PrefillModel : public ::testing::TestWithParam<const char*> {
 protected:
  static constexpr int64_t kBlockSize = 16;
  static constexpr int64_t kChunk = 13;

  void SetUp() override {
    PACELINE_REQUIRE_GPU();
    folder_ = std::filesystem::path(testing::source_dir()) / "tests/fixtures/models" / GetParam();
    config_ = model_config_load(folder_.string());
    weights_ = load_safetensors_weights(folder_.string(), config_);
    reference_ = std::make_unique<SafetensorsFile>((folder_ / "reference.safetensors").string());
    std::ifstream in(folder_ / "reference.json");
    const nlohmann::json root = nlohmann::json::parse(in);
    for (const auto& p : root.at("prompts")) {
      names_.push_back(p.at("name").get<std::string>());
      prompts_.push_back(p.at("token_ids").get<std::vector<int32_t>>());
      positions_.push_back(p.at("logit_positions").get<std::vector<int64_t>>());
    }
  }

  CudaExecutorOptions options(bool fp8_cache, bool fp8_attention) const {
    int64_t tokens = 0;
    for (const auto& p : prompts_) tokens += static_cast<int64_t>(p.size()) + kBlockSize;
    CudaExecutorOptions o;
    o.block_size = kBlockSize;
    o.kv_cache_bytes = tokens * config_.kv_bytes_per_token(fp8_cache ? 1 : 2);
    o.max_num_batched_tokens = 1024;
    o.fp8_kv_cache = fp8_cache;
    o.fp8_prefill_attention = fp8_attention;
    return o;
  }

  // Every position's logits of prompt i, prefilled in chunks.
  std::vector<float> run(CudaExecutor& gpu, size_t i) const {
    testing::BlockPool pool(gpu.capabilities().kv.num_blocks, 3);
    std::vector<int32_t> table;
    std::vector<float> all;
    const auto n = static_cast<int64_t>(prompts_[i].size());
    for (int64_t begin = 0; begin < n; begin += kChunk) {
      const int64_t end = std::min(n, begin + kChunk);
      pool.cover(table, end, kBlockSize);
      std::vector<int32_t> chunk(prompts_[i].begin() + begin, prompts_[i].begin() + end);
      StepPlan plan;
      plan.seqs.push_back(
          testing::make_seq(i, chunk, begin, table, static_cast<int32_t>(end - begin)));
      gpu.execute(plan);
      const std::vector<float> l = gpu.last_logits();
      all.insert(all.end(), l.begin(), l.end());
    }
    return all;
  }

  std::filesystem::path folder_;
  ModelConfig config_;
  std::unique_ptr<Weights> weights_;
  std::unique_ptr<SafetensorsFile> reference_;
  std::vector<std::string> names_;
  std::vector<std::vector<int32_t>> prompts_;
  std::vector<std::vector<int64_t>> positions_;
};

int64_t argmax(const float* row, int64_t n) { return std::max_element(row, row + n) - row; }

TEST_P(CudaFp8PrefillModel, LogitsStayCloseToHfAndToBf16Attention) {
  const int64_t vocab = config_.vocab_size;
  for (const bool fp8_cache : {false, true}) {
    CudaExecutor bf16(config_, *weights_, options(fp8_cache, false));
    CudaExecutor fp8(config_, *weights_, options(fp8_cache, true));
    double worst_hf = 0, worst_bf16 = 0, worst_bf16_hf = 0;
    int64_t rows = 0, top1_hf = 0, top1_bf16 = 0;
    for (size_t i = 0; i < prompts_.size(); ++i) {
      const std::vector<float> a = run(bf16, i);
      const std::vector<float> b = run(fp8, i);
      const TensorView* t = reference_->find("logits." + names_[i]);
      ASSERT_NE(t, nullptr);
      std::vector<float> hf(static_cast<size_t>(t->numel()));
      t->to_f32(hf.data());
      for (size_t r = 0; r < positions_[i].size(); ++r) {
        const float* h = hf.data() + r * vocab;
        const float* pa = a.data() + positions_[i][r] * vocab;
        const float* pb = b.data() + positions_[i][r] * vocab;
        worst_hf = std::max(worst_hf, testing::relative_error(pb, h, vocab));
        worst_bf16 = std::max(worst_bf16, testing::relative_error(pb, pa, vocab));
        worst_bf16_hf = std::max(worst_bf16_hf, testing::relative_error(pa, h, vocab));
        ++rows;
        top1_hf += argmax(pb, vocab) == argmax(h, vocab) ? 1 : 0;
        top1_bf16 += argmax(pb, vocab) == argmax(pa, vocab) ? 1 : 0;
      }
    }
    std::printf("[ fp8 prefill ] %s, %s: %lld positions; relative error vs HF %.3e (bf16 "
                "attention: %.3e), vs the bf16-attention run %.3e; top-1 agreement with HF %.3f, "
                "with bf16 attention %.3f\n",
                GetParam(), cache_name(fp8_cache), static_cast<long long>(rows), worst_hf,
                worst_bf16_hf, worst_bf16, static_cast<double>(top1_hf) / static_cast<double>(rows),
                static_cast<double>(top1_bf16) / static_cast<double>(rows));
    EXPECT_LE(worst_hf, 0.15) << cache_name(fp8_cache);
    EXPECT_GE(static_cast<double>(top1_hf) / static_cast<double>(rows), 0.9)
        << cache_name(fp8_cache);
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, CudaFp8PrefillModel,
                         ::testing::Values("qwen3-tiny-random", "llama-tiny-random",
                                           "qwen3-yarn-tiny-random"));

}  // namespace
}  // namespace paceline
#else
TEST(CudaFp8PrefillAttention, NeedsCudaBuild) { GTEST_SKIP() << "this build has no CUDA"; }
#endif
