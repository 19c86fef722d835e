// Batch invariance on the GPU: greedy tokens of 64 prompts decoded alone, and at batch 4, 8 and
// 64, eagerly and through CUDA graphs, are the same for 32 steps (the same check as
// `paceline check`).
#include <iostream>
#include <memory>

#include <gtest/gtest.h>

#include "cuda_test_util.h"
#include "model/config.h"
#include "model/weights.h"
#include "sched/cudagraph_sizes.h"

#if PACELINE_HAVE_CUDA
#include "exec/cuda/batch_invariance.h"

namespace paceline {
namespace {

void run_check(const ModelConfig& config, const Weights& weights) {
  CudaExecutorOptions o;
  o.kv_cache_bytes = int64_t{64} * (300 + 32 + 16) * config.kv_bytes_per_token(2) * 2;
  o.max_num_batched_tokens = 64 * 300;
  o.cudagraph_sizes = default_cudagraph_capture_sizes(64);
  CudaExecutor executor(config, weights, o);
  BatchInvarianceOptions bo;
  bo.vocab_size = config.vocab_size;
  bo.graph_sizes = executor.graph_sizes();
  BatchInvarianceReport report = check_batch_invariance(executor, bo);
  std::cout << report.summary();
  EXPECT_TRUE(report.ok()) << report.summary();
  EXPECT_EQ(report.runs.size(), 8u);  // batch 1 eager + 3 eager + 4 graph configurations
}

TEST(CudaBatchInvariance, QwenTinyFixture) {
  PACELINE_REQUIRE_GPU();
  const std::string folder = testing::source_dir() + "/tests/fixtures/models/qwen3-tiny-random";
  ModelConfig config = model_config_load(folder);
  run_check(config, *load_safetensors_weights(folder, config));
}

TEST(CudaBatchInvariance, LlamaTinyFixture) {
  PACELINE_REQUIRE_GPU();
  const std::string folder = testing::source_dir() + "/tests/fixtures/models/llama-tiny-random";
  ModelConfig config = model_config_load(folder);
  run_check(config, *load_safetensors_weights(folder, config));
}

TEST(CudaBatchInvariance, Qwen3_1_7bDummy) {
  PACELINE_REQUIRE_GPU();
  ModelConfig config = model_config_load("qwen3-1.7b");
  run_check(config, *make_dummy_weights(config, 0));
}

}  // namespace
}  // namespace paceline

#else
TEST(CudaBatchInvariance, NeedsCudaBuild) { GTEST_SKIP() << "this build has no CUDA"; }
#endif
