// The proof: CpuModel against Hugging Face Transformers 5.17 (float32, eager attention) on the
// tiny random Qwen3 and Llama checkpoints of tests/fixtures/models (made by
// tools/fixtures/make_fixtures.py) and the Qwen3 YaRN one (tools/fixtures/make_yarn_fixture.py,
// prompts to 256 tokens over an original context of 64). Logits within 1e-3 whether the prompts
// run as one ragged batch or as chunked prefills through shuffled blocks, and the exact greedy
// continuations from batched decode steps; the ragged batch and the greedy steps also with the
// model split into two tensor-parallel ranks (exec/cpu/tensor_parallel.h).
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "exec/cpu/cpu_executor.h"
#include "exec/cpu/cpu_model.h"
#include "hf_fixture.h"
#include "test_model.h"

namespace paceline {
namespace {

namespace fs = std::filesystem;
using testing::BlockPool;
using testing::HfPrompt;

constexpr int64_t kBlockSize = 16;
constexpr float kTolerance = 1e-3f;

class HfParity : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    const fs::path folder = fs::path(PACELINE_SOURCE_DIR) / "tests/fixtures/models" / GetParam();
    if (!testing::HfFixture::exists(folder)) GTEST_SKIP() << "no fixture at " << folder;
    hf_ = std::make_unique<testing::HfFixture>(folder);
    if (config().arch == ModelArch::kLlama) {
      // The Llama fixture exists to cover llama3 RoPE scaling (original context 64, prompts to
      // 300).
      ASSERT_TRUE(config().rope_scaling.has_value());
    } else {
      ASSERT_TRUE(config().qk_norm);
    }
    cache_ = KvCacheShape{hf_->num_blocks(kBlockSize), kBlockSize};
  }

  const ModelConfig& config() const { return hf_->config; }

  // Max |ours - HF| over prompt p's logit positions; `ours` holds rows for positions
  // [first_position, first_position + rows).
  float max_diff_vs_hf(const HfPrompt& p, const std::vector<float>& ours,
                       int64_t first_position) const {
    return testing::max_abs_diff(hf_->pick_rows(p, ours, first_position),
                                 hf_->hf_rows(p, first_position));
  }

  void all_prompts_in_one_ragged_batch(int ranks);
  void greedy_continuations(int ranks);

  std::unique_ptr<testing::HfFixture> hf_;
  KvCacheShape cache_;
};

// Every prompt in one ragged batch through a model split into `ranks` tensor-parallel ranks.
void HfParity::all_prompts_in_one_ragged_batch(int ranks) {
  CpuModel model(config(), *hf_->weights, cache_, 2, ranks);
  BlockPool pool(cache_.num_blocks);
  std::vector<int64_t> firsts;
  const StepPlan plan = hf_->ragged_prefill(pool, kBlockSize, firsts);
  std::vector<float> logits = model.forward(plan);

  int64_t row = 0;
  for (size_t i = 0; i < hf_->prompts.size(); ++i) {
    const int64_t rows = plan.seqs[i].num_logits;
    std::vector<float> mine = testing::logit_rows(logits, config().vocab_size, row, rows);
    float diff = max_diff_vs_hf(hf_->prompts[i], mine, firsts[i]);
    std::cout << "[ parity ] " << GetParam() << " " << hf_->prompts[i].name << ", " << ranks
              << " rank(s): max |dlogit| " << diff << "\n";
    EXPECT_LE(diff, kTolerance) << hf_->prompts[i].name;
    row += rows;
  }
}

TEST_P(HfParity, AllPromptsInOneRaggedBatch) { all_prompts_in_one_ragged_batch(1); }

TEST_P(HfParity, AllPromptsInOneRaggedBatchOverTwoTensorParallelRanks) {
  if (config().num_key_value_heads % 2 != 0) GTEST_SKIP() << "one KV head: not split in two";
  all_prompts_in_one_ragged_batch(2);
}

TEST_P(HfParity, ChunkedPrefillThroughShuffledBlocks) {
  // Chunks of 13 tokens cross block boundaries (16); each step batches every prompt's next chunk.
  CpuModel model(config(), *hf_->weights, cache_, 2);
  BlockPool pool(cache_.num_blocks, /*shuffle_seed=*/2024);
  const std::vector<std::vector<float>> all = hf_->chunked_prefill(
      pool, kBlockSize, 13, [&](const StepPlan& plan) { return model.forward(plan); });
  for (size_t i = 0; i < hf_->prompts.size(); ++i) {
    EXPECT_LE(max_diff_vs_hf(hf_->prompts[i], all[i], 0), kTolerance) << hf_->prompts[i].name;
  }
}

// HF's greedy continuations from batched decode steps on `ranks` tensor-parallel ranks.
void HfParity::greedy_continuations(int ranks) {
  CpuExecutor executor(config(), *hf_->weights, cache_, 2, 0, ranks);
  BlockPool pool(cache_.num_blocks, /*shuffle_seed=*/7);
  hf_->expect_greedy_continuations(pool, kBlockSize, [&](StepPlan& plan) {
    const StepResult result = executor.execute(plan);
    std::vector<int32_t> tokens;
    for (const auto& seq : result.seqs) tokens.push_back(seq.tokens.at(0));
    return tokens;
  });
}

TEST_P(HfParity, GreedyContinuationsFromBatchedDecodeSteps) { greedy_continuations(1); }

TEST_P(HfParity, GreedyContinuationsOverTwoTensorParallelRanks) {
  if (config().num_key_value_heads % 2 != 0) GTEST_SKIP() << "one KV head: not split in two";
  greedy_continuations(2);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, HfParity,
                         ::testing::Values("qwen3-tiny-random", "llama-tiny-random",
                                           "qwen3-yarn-tiny-random"),
                         [](const auto& info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

}  // namespace
}  // namespace paceline
