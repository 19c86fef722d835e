// The CUDA executor with an FP8 (e4m3) KV cache against Hugging Face and against its own bfloat16
// cache on the model fixtures: prompts prefilled in chunks of 13 (the prefill kernel reads the
// cached prefix from the FP8 cache, the short last chunks go through the decode kernel), every
// position's logits compared with HF's (relative error, top-1 agreement) and with the bf16-KV
// run. The figures are printed for docs/cuda.md; the bounds are the accuracy the docs state.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "../cpu_forward/hf_fixture.h"
#include "../cpu_forward/test_model.h"
#include "cuda_test_util.h"
#include "model/config.h"

#if PACELINE_HAVE_CUDA
namespace paceline {
namespace {

namespace fs = std::filesystem;
using testing::BlockPool;
using testing::make_seq;

constexpr int64_t kBlockSize = 16;
constexpr int64_t kChunk = 13;

int64_t argmax(const float* row, int64_t n) {
  return std::max_element(row, row + n) - row;
}

class CudaFp8Kv : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    PACELINE_REQUIRE_GPU();
    hf_ = std::make_unique<testing::HfFixture>(fs::path(testing::source_dir()) /
                                               "tests/fixtures/models" / GetParam());
  }

  const ModelConfig& config() const { return hf_->config; }

  CudaExecutorOptions options(bool fp8) const {
    int64_t tokens = 0;
    for (const auto& p : hf_->prompts) tokens += static_cast<int64_t>(p.tokens.size()) + kBlockSize;
    CudaExecutorOptions o;
    o.block_size = kBlockSize;
    o.kv_cache_bytes = tokens * config().kv_bytes_per_token(fp8 ? 1 : 2);
    o.max_num_batched_tokens = 1024;
    o.fp8_kv_cache = fp8;
    return o;
  }

  // Every position's logits of prompt i, prefilled in chunks, alone.
  std::vector<float> run(CudaExecutor& gpu, BlockPool& pool, size_t i) const {
    const std::vector<int32_t>& prompt = hf_->prompts[i].tokens;
    std::vector<int32_t> table;
    std::vector<float> all;
    const auto n = static_cast<int64_t>(prompt.size());
    for (int64_t begin = 0; begin < n; begin += kChunk) {
      const int64_t end = std::min(n, begin + kChunk);
      pool.cover(table, end, kBlockSize);
      std::vector<int32_t> chunk(prompt.begin() + begin, prompt.begin() + end);
      StepPlan plan;
      plan.seqs.push_back(make_seq(i, chunk, begin, table, static_cast<int32_t>(end - begin)));
      gpu.execute(plan);
      const std::vector<float> l = gpu.last_logits();
      all.insert(all.end(), l.begin(), l.end());
    }
    return all;
  }

  std::unique_ptr<testing::HfFixture> hf_;
};

TEST_P(CudaFp8Kv, LogitsStayCloseToHfAndToTheBf16Cache) {
  CudaExecutor bf16(config(), *hf_->weights, options(false));
  CudaExecutor fp8(config(), *hf_->weights, options(true));
  const ExecutorCapabilities x = fp8.capabilities();
  EXPECT_EQ(x.kv_dtype, "fp8_e4m3");
  EXPECT_EQ(x.kv_element_bytes, 1);
  EXPECT_EQ(bf16.capabilities().kv_dtype, "bfloat16");
  // The same token capacity from half the bytes.
  EXPECT_EQ(x.kv.num_blocks, bf16.capabilities().kv.num_blocks);
  BlockPool pool_a(bf16.capabilities().kv.num_blocks, 3), pool_b(x.kv.num_blocks, 3);
  const int64_t vocab = config().vocab_size;
  double worst_hf = 0, worst_bf16 = 0, worst_bf16_hf = 0;
  int64_t rows = 0, top1_hf = 0, top1_bf16 = 0;
  for (size_t i = 0; i < hf_->prompts.size(); ++i) {
    const testing::HfPrompt& p = hf_->prompts[i];
    // The rows at HF's logit positions, in its order.
    const std::vector<float> a = hf_->pick_rows(p, run(bf16, pool_a, i));
    const std::vector<float> b = hf_->pick_rows(p, run(fp8, pool_b, i));
    const std::vector<float> hf = hf_->hf_rows(p);
    ASSERT_EQ(hf.size(), p.logit_positions.size() * static_cast<size_t>(vocab));
    for (size_t r = 0; r < p.logit_positions.size(); ++r) {
      const float* h = hf.data() + r * vocab;
      const float* pa = a.data() + r * vocab;
      const float* pb = b.data() + r * vocab;
      worst_hf = std::max(worst_hf, testing::relative_error(pb, h, vocab));
      worst_bf16 = std::max(worst_bf16, testing::relative_error(pb, pa, vocab));
      worst_bf16_hf = std::max(worst_bf16_hf, testing::relative_error(pa, h, vocab));
      ++rows;
      top1_hf += argmax(pb, vocab) == argmax(h, vocab) ? 1 : 0;
      top1_bf16 += argmax(pb, vocab) == argmax(pa, vocab) ? 1 : 0;
    }
  }
  std::printf("[ fp8 kv ] %s: %lld positions; relative error vs HF %.3e (bf16 KV: %.3e), vs the "
              "bf16-KV run %.3e; top-1 agreement with HF %.3f, with bf16 KV %.3f\n",
              GetParam(), static_cast<long long>(rows), worst_hf, worst_bf16_hf, worst_bf16,
              static_cast<double>(top1_hf) / static_cast<double>(rows),
              static_cast<double>(top1_bf16) / static_cast<double>(rows));
  EXPECT_LE(worst_hf, 0.1);
  EXPECT_GE(static_cast<double>(top1_hf) / static_cast<double>(rows), 0.9);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, CudaFp8Kv,
                         ::testing::Values("qwen3-tiny-random", "llama-tiny-random",
                                           "qwen3-yarn-tiny-random"));

}  // namespace
}  // namespace paceline
#else
TEST(CudaFp8Kv, NeedsCudaBuild) { GTEST_SKIP() << "this build has no CUDA"; }
#endif
