// The CUDA executor against the CPU executor and Hugging Face Transformers: logits within 1e-2
// relative error (bf16 weights and KV cache against float32 references) for the tiny Qwen3,
// Llama and Qwen3-YaRN fixtures and a Qwen3-1.7B-shaped dummy model, through one ragged prefill, chunked
// prefills over shuffled blocks, decode and speculative-verify steps, eager and replayed from
// CUDA graphs; and greedy continuations identical to HF's for 32 tokens.
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "../cpu_forward/hf_fixture.h"
#include "../cpu_forward/test_model.h"
#include "cuda_test_util.h"
#include "exec/cpu/cpu_executor.h"
#include "model/config.h"
#include "model/weights.h"
#include "sched/cudagraph_sizes.h"

#if PACELINE_HAVE_CUDA
namespace paceline {
namespace {

namespace fs = std::filesystem;
using testing::BlockPool;
using testing::make_seq;

constexpr int64_t kBlockSize = 16;

CudaExecutorOptions small_options(int64_t kv_bytes, std::vector<int32_t> graph_sizes = {}) {
  CudaExecutorOptions o;
  o.block_size = kBlockSize;
  o.kv_cache_bytes = kv_bytes;
  o.max_num_batched_tokens = 4096;
  o.cudagraph_sizes = std::move(graph_sizes);
  return o;
}

class CudaParity : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    PACELINE_REQUIRE_GPU();
    const fs::path folder = fs::path(testing::source_dir()) / "tests/fixtures/models" / GetParam();
    ASSERT_TRUE(testing::HfFixture::exists(folder)) << "no fixture at " << folder;
    hf_ = std::make_unique<testing::HfFixture>(folder);
  }

  const ModelConfig& config() const { return hf_->config; }
  int64_t kv_bytes() const {
    return hf_->num_blocks(kBlockSize) * kBlockSize * config().kv_bytes_per_token(2);
  }
  void expect_greedy_matches(bool graphs);

  std::unique_ptr<testing::HfFixture> hf_;
};

TEST_P(CudaParity, RaggedPrefillMatchesHfAndCpu) {
  CudaExecutor gpu(config(), *hf_->weights, small_options(kv_bytes()));
  CpuExecutor cpu(config(), *hf_->weights, gpu.kv_cache_shape(), 2);
  BlockPool pool(gpu.kv_cache_shape().num_blocks);
  std::vector<int64_t> firsts;
  const StepPlan plan = hf_->ragged_prefill(pool, kBlockSize, firsts);
  gpu.execute(plan);
  std::vector<float> ours = gpu.last_logits();
  std::vector<float> cpu_logits = cpu.model().forward(plan);
  const int64_t vocab = config().vocab_size;
  double worst_cpu = testing::worst_relative_error(ours, cpu_logits, vocab);
  int64_t row = 0;
  double worst_hf = 0.0;
  for (size_t i = 0; i < hf_->prompts.size(); ++i) {
    const testing::HfPrompt& p = hf_->prompts[i];
    const int64_t rows = plan.seqs[i].num_logits;
    std::vector<float> mine = testing::logit_rows(ours, vocab, row, rows);
    double e = testing::worst_relative_error(hf_->pick_rows(p, mine, firsts[i]),
                                             hf_->hf_rows(p, firsts[i]), vocab);
    worst_hf = std::max(worst_hf, e);
    EXPECT_LE(e, testing::kBf16Tolerance) << p.name;
    row += rows;
  }
  std::cout << "[ parity ] " << GetParam() << " ragged prefill: relative error vs HF " << worst_hf
            << ", vs CPU " << worst_cpu << "\n";
  EXPECT_LE(worst_cpu, testing::kBf16Tolerance);
}

TEST_P(CudaParity, ChunkedPrefillThroughShuffledBlocksMatchesHf) {
  // Chunks of 13 cross block boundaries; the last chunk of a prompt is often short enough for
  // the decode kernel, so both attention kernels meet a cached prefix.
  CudaExecutor gpu(config(), *hf_->weights, small_options(kv_bytes()));
  BlockPool pool(gpu.kv_cache_shape().num_blocks, 2024);
  const std::vector<std::vector<float>> all =
      hf_->chunked_prefill(pool, kBlockSize, 13, [&](const StepPlan& plan) {
        gpu.execute(plan);
        return gpu.last_logits();
      });
  for (size_t i = 0; i < hf_->prompts.size(); ++i) {
    const testing::HfPrompt& p = hf_->prompts[i];
    double e = testing::worst_relative_error(hf_->pick_rows(p, all[i]), hf_->hf_rows(p),
                                             config().vocab_size);
    EXPECT_LE(e, testing::kBf16Tolerance) << p.name;
  }
}

// Greedy continuations of every prompt, decoded together, eagerly or through graphs (every
// decode step replayed from one).
void CudaParity::expect_greedy_matches(bool graphs) {
  std::vector<int32_t> sizes = graphs ? default_cudagraph_capture_sizes(16) : std::vector<int32_t>{};
  CudaExecutor gpu(config(), *hf_->weights, small_options(kv_bytes(), sizes));
  BlockPool pool(gpu.kv_cache_shape().num_blocks, 7);
  int steps = 0, graph_steps = 0;
  hf_->expect_greedy_continuations(pool, kBlockSize, [&](StepPlan& plan) {
    if (graphs && plan.kind == ForwardKind::kDecode) {
      plan.padded_batch_size = padded_batch_size(sizes, static_cast<int32_t>(plan.seqs.size()));
    }
    const StepResult r = gpu.execute(plan);
    ++steps;
    graph_steps += gpu.last_step_used_graph() ? 1 : 0;
    std::vector<int32_t> tokens;
    for (const auto& seq : r.seqs) tokens.push_back(seq.tokens.at(0));
    return tokens;
  });
  EXPECT_GT(steps, 1);
  EXPECT_EQ(graph_steps, graphs ? steps - 1 : 0);
}

TEST_P(CudaParity, GreedyContinuationsMatchHfEager) { expect_greedy_matches(false); }

TEST_P(CudaParity, GreedyContinuationsMatchHfWithGraphs) { expect_greedy_matches(true); }

INSTANTIATE_TEST_SUITE_P(Fixtures, CudaParity,
                         ::testing::Values("qwen3-tiny-random", "llama-tiny-random",
                                           "qwen3-yarn-tiny-random"),
                         [](const auto& info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

// A Qwen3-1.7B-shaped model with dummy weights: prefill, decode, and a speculative verify step
// (4 tokens, 4 logits per sequence) against the CPU executor on the same weights.
TEST(CudaParityDummy, Qwen3_1_7bPrefillDecodeVerifyMatchCpu) {
  PACELINE_REQUIRE_GPU();
  ModelConfig config = model_config_load("qwen3-1.7b");
  std::unique_ptr<Weights> weights = make_dummy_weights(config, 0);
  CudaExecutor gpu(config, *weights, small_options(int64_t{1} << 30, {1, 2, 4}));
  CpuExecutor cpu(config, *weights, gpu.kv_cache_shape(), 16);
  BlockPool pool(gpu.kv_cache_shape().num_blocks, 11);
  const int64_t vocab = config.vocab_size;
  std::vector<std::vector<int32_t>> tables(3);
  StepPlan plan;
  const int64_t lengths[3] = {5, 70, 300};
  for (int i = 0; i < 3; ++i) {
    pool.cover(tables[i], lengths[i], kBlockSize);
    plan.seqs.push_back(make_seq(i, testing::random_tokens(lengths[i], vocab, 100 + i), 0, tables[i], 2));
  }
  auto compare = [&](const char* what) {
    StepResult g = gpu.execute(plan);
    std::vector<float> gl = gpu.last_logits();
    std::vector<float> cl = cpu.model().forward(plan);
    double e = testing::worst_relative_error(gl, cl, vocab);
    std::cout << "[ parity ] qwen3-1.7b dummy " << what << ": relative error vs CPU " << e
              << (gpu.last_step_used_graph() ? " (graph)" : "") << "\n";
    EXPECT_LE(e, testing::kBf16Tolerance) << what;
    return g;
  };
  StepResult r = compare("prefill");
  for (int step = 0; step < 3; ++step) {
    for (size_t s = 0; s < plan.seqs.size(); ++s) {
      ScheduledSeq& seq = plan.seqs[s];
      seq.start_pos += static_cast<int64_t>(seq.tokens.size());
      seq.tokens = {r.seqs[s].tokens.back()};
      seq.num_logits = 1;
      pool.cover(tables[s], seq.start_pos + 1, kBlockSize);
      seq.block_table = tables[s];
    }
    plan.kind = ForwardKind::kDecode;
    plan.padded_batch_size = step == 0 ? 0 : 4;
    r = compare(step == 0 ? "decode eager" : "decode graph");
  }
  // Verify: k + 1 = 4 tokens per sequence, logits for all of them.
  for (size_t s = 0; s < plan.seqs.size(); ++s) {
    ScheduledSeq& seq = plan.seqs[s];
    seq.start_pos += 1;
    seq.tokens = {r.seqs[s].tokens.back(), 1, 2, 3};
    seq.num_logits = 4;
    pool.cover(tables[s], seq.start_pos + 4, kBlockSize);
    seq.block_table = tables[s];
  }
  plan.padded_batch_size = 0;
  r = compare("verify k+1=4");
  for (const SeqResult& sr : r.seqs) EXPECT_EQ(sr.tokens.size(), 4u);
}

}  // namespace
}  // namespace paceline

#else
TEST(CudaParity, NeedsCudaBuild) { GTEST_SKIP() << "this build has no CUDA"; }
#endif
