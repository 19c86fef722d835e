// Logprobs on the GPU equal the host's (src/exec/logprobs.cpp) on the same float32 logits: the
// chosen token's (greedy and sampled) and the top 20 in the same order, ties included, on flat,
// peaked, bf16-rounded and heavily tied rows of a Qwen3-sized vocabulary; and the CUDA executor
// reports them only for the rows that ask, equal to the host's on its own logits.
#include <vector>

#include <gtest/gtest.h>

#include "cuda_test_util.h"
#include "exec/logprobs.h"
#include "exec/sampler.h"

#if PACELINE_HAVE_CUDA
#include "../cpu_forward/test_model.h"
#include "exec/cuda/cuda_check.h"
#include "exec/cuda/device_buffer.h"
#include "exec/cuda/kernels.h"
#include "logit_rows.h"

namespace paceline {
namespace {

using cuda::DeviceBuffer;
using cuda::LogprobResult;
using cuda::LogprobRow;

constexpr int64_t kVocab = testing::kLogitRowVocab;
constexpr float kTolerance = 1e-5f;

void expect_same(const RowLogprobs& gpu, const RowLogprobs& host, const std::string& what) {
  EXPECT_EQ(gpu.chosen.token, host.chosen.token) << what;
  EXPECT_NEAR(gpu.chosen.logprob, host.chosen.logprob, kTolerance) << what;
  ASSERT_EQ(gpu.top.size(), host.top.size()) << what;
  for (size_t k = 0; k < host.top.size(); ++k) {
    EXPECT_EQ(gpu.top[k].token, host.top[k].token) << what << ", rank " << k;
    EXPECT_NEAR(gpu.top[k].logprob, host.top[k].logprob, kTolerance) << what << ", rank " << k;
  }
}

TEST(CudaLogprobs, KernelEqualsTheHostOnEveryKindOfRow) {
  PACELINE_REQUIRE_GPU();
  const std::vector<float> logits = testing::make_logit_rows(5);
  const int num_kinds = static_cast<int>(logits.size() / kVocab);
  // Chosen tokens: row r's greedy token is greedy[r]; the "sampled" ones are arbitrary ids.
  std::vector<int32_t> greedy, drawn = {7, 151935, 123456, 0};
  std::vector<LogprobRow> rows;
  for (int r = 0; r < num_kinds; ++r) {
    greedy.push_back(sample_greedy(std::span<const float>(logits.data() + r * kVocab, kVocab)));
    for (int num_top : {0, 1, 5, 20}) {
      rows.push_back({r, -1, num_top, 0});
      rows.push_back({r, r, num_top, 0});
    }
  }
  DeviceBuffer d_logits(logits.size() * sizeof(float));
  DeviceBuffer d_rows(rows.size() * sizeof(LogprobRow));
  DeviceBuffer d_greedy(greedy.size() * sizeof(int32_t));
  DeviceBuffer d_drawn(drawn.size() * sizeof(int32_t));
  DeviceBuffer d_out(rows.size() * sizeof(LogprobResult));
  PACELINE_CUDA_CHECK(cudaMemcpy(d_logits.as<float>(), logits.data(), logits.size() * sizeof(float),
                                 cudaMemcpyHostToDevice));
  PACELINE_CUDA_CHECK(cudaMemcpy(d_rows.as<LogprobRow>(), rows.data(),
                                 rows.size() * sizeof(LogprobRow), cudaMemcpyHostToDevice));
  PACELINE_CUDA_CHECK(cudaMemcpy(d_greedy.as<int32_t>(), greedy.data(),
                                 greedy.size() * sizeof(int32_t), cudaMemcpyHostToDevice));
  PACELINE_CUDA_CHECK(cudaMemcpy(d_drawn.as<int32_t>(), drawn.data(),
                                 drawn.size() * sizeof(int32_t), cudaMemcpyHostToDevice));
  PACELINE_CUDA_CHECK(cuda::launch_logprobs(d_logits.as<float>(), kVocab, d_rows.as<LogprobRow>(),
                                            static_cast<int>(rows.size()), d_greedy.as<int32_t>(),
                                            d_drawn.as<int32_t>(), d_out.as<LogprobResult>(),
                                            nullptr));
  std::vector<LogprobResult> out(rows.size());
  PACELINE_CUDA_CHECK(cudaMemcpy(out.data(), d_out.as<LogprobResult>(),
                                 out.size() * sizeof(LogprobResult), cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < rows.size(); ++i) {
    const LogprobRow& r = rows[i];
    std::span<const float> row(logits.data() + r.row * kVocab, kVocab);
    const int32_t chosen = r.sampled < 0 ? greedy[r.row] : drawn[r.sampled];
    const RowLogprobs host = row_logprobs(row, chosen, r.num_top);
    RowLogprobs gpu;
    gpu.chosen = {out[i].token, out[i].logprob};
    for (int k = 0; k < r.num_top; ++k) gpu.top.push_back({out[i].top_tokens[k], out[i].top_logprobs[k]});
    expect_same(gpu, host,
                "row kind " + std::to_string(r.row) + ", chosen " + std::to_string(chosen) +
                    ", top " + std::to_string(r.num_top));
  }
}

TEST(CudaLogprobs, ExecutorReportsThemOnlyForRowsThatAsk) {
  PACELINE_REQUIRE_GPU();
  const ModelConfig config = testing::tiny_config();
  testing::TestWeights weights(config, 5);
  CudaExecutorOptions o;
  o.kv_cache_bytes = 64 * 16 * config.kv_bytes_per_token(2);
  o.max_num_batched_tokens = 256;
  CudaExecutor gpu(config, weights, o);
  StepPlan plan;
  plan.seqs.push_back(testing::make_seq(1, {1, 2, 3, 4, 5}, 0, {0}, 1));
  plan.seqs.push_back(testing::make_seq(2, {7, 8, 9}, 0, {1}, 3));  // several logit rows
  plan.seqs.push_back(testing::make_seq(3, {11, 12}, 0, {2}, 1));
  plan.seqs[0].sampling.temperature = 0.8;  // sampled, with logprobs
  plan.seqs[0].seed = 42;
  plan.seqs[0].num_logprobs = 4;
  plan.seqs[1].sampling.temperature = 0.0;  // greedy, with logprobs
  plan.seqs[1].num_logprobs = 20;
  plan.seqs[2].sampling.temperature = 0.0;  // no logprobs
  const StepResult r = gpu.execute(plan);
  const std::vector<float> logits = gpu.last_logits();
  const int64_t vocab = config.vocab_size;
  EXPECT_TRUE(r.seqs[2].logprobs.empty());
  int row = 0;
  for (size_t s = 0; s < 2; ++s) {
    const ScheduledSeq& seq = plan.seqs[s];
    ASSERT_EQ(r.seqs[s].logprobs.size(), static_cast<size_t>(seq.num_logits));
    for (int i = 0; i < seq.num_logits; ++i, ++row) {
      std::span<const float> l(logits.data() + row * vocab, static_cast<size_t>(vocab));
      expect_same(r.seqs[s].logprobs[static_cast<size_t>(i)],
                  row_logprobs(l, r.seqs[s].tokens[static_cast<size_t>(i)], seq.num_logprobs),
                  "sequence " + std::to_string(s) + ", logit row " + std::to_string(i));
    }
  }
}

}  // namespace
}  // namespace paceline
#endif
