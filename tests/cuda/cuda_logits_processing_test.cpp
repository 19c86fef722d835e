// logit_bias, penalties and min_p on the GPU give what the host gives on the same logits: the
// sparse adjustment kernel writes bit for bit the host's processed row; the sampling kernel with
// min_p draws the host sampler's token; and the CUDA executor's tokens for rows with these
// fields (greedy and sampled) are sample_processed's on its own raw logits.
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "cuda_test_util.h"
#include "exec/logits_processors.h"
#include "exec/sampler.h"

#if PACELINE_HAVE_CUDA
#include "../cpu_forward/test_model.h"
#include "exec/cuda/cuda_check.h"
#include "exec/cuda/device_buffer.h"
#include "exec/cuda/kernels.h"
#include "sample_on_gpu.h"

namespace paceline {
namespace {

using cuda::DeviceBuffer;
using cuda::SampleRow;

constexpr int64_t kVocab = 151936;

std::vector<float> normal_rows(int rows, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::vector<float> out(static_cast<size_t>(rows) * kVocab);
  for (float& v : out) v = normal(rng);
  return out;
}

std::vector<int32_t> random_history(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> token(0, 2000);  // a small range: many repeats
  std::vector<int32_t> h(n);
  for (int32_t& t : h) t = token(rng);
  return h;
}

SamplingParams fields(int kind) {
  SamplingParams p;
  auto bias = std::make_shared<std::vector<TokenBias>>();
  for (int32_t t = 0; t < 3000; t += 7) bias->push_back({t, static_cast<float>(t % 201 - 100)});
  switch (kind) {
    case 0:
      p.logit_bias = bias;
      break;
    case 1:
      p.presence_penalty = 1.25;
      break;
    case 2:
      p.frequency_penalty = -0.7;
      break;
    case 3:
      p.repetition_penalty = 1.3;
      break;
    default:
      p.logit_bias = bias;
      p.presence_penalty = -0.4;
      p.frequency_penalty = 1.9;
      p.repetition_penalty = 0.8;
  }
  return p;
}

TEST(CudaLogitsProcessing, AdjustmentKernelWritesTheHostsProcessedRows) {
  PACELINE_REQUIRE_GPU();
  constexpr int kRows = 5;
  std::vector<float> logits = normal_rows(kRows, 3);
  std::vector<float> expected = logits;
  std::vector<LogitAdjustment> adjustments;
  for (int r = 0; r < kRows; ++r) {
    const std::vector<int32_t> history = random_history(5000, 10 + static_cast<uint32_t>(r));
    const size_t first = adjustments.size();
    append_logit_adjustments(fields(r), history, 3000, kVocab, r, adjustments);
    ASSERT_GT(adjustments.size(), first);
    apply_logit_adjustments(std::span<float>(expected.data() + r * kVocab, kVocab),
                            std::span<const LogitAdjustment>(adjustments).subspan(first));
  }
  DeviceBuffer d_logits(logits.size() * sizeof(float));
  DeviceBuffer d_adj(adjustments.size() * sizeof(LogitAdjustment));
  PACELINE_CUDA_CHECK(cudaMemcpy(d_logits.as<float>(), logits.data(), logits.size() * sizeof(float),
                                 cudaMemcpyHostToDevice));
  PACELINE_CUDA_CHECK(cudaMemcpy(d_adj.as<void>(), adjustments.data(),
                                 adjustments.size() * sizeof(LogitAdjustment),
                                 cudaMemcpyHostToDevice));
  PACELINE_CUDA_CHECK(
      cuda::launch_logit_adjustments(d_logits.as<float>(), kVocab, d_adj.as<LogitAdjustment>(),
                                     static_cast<int>(adjustments.size()), nullptr));
  std::vector<float> got(logits.size());
  PACELINE_CUDA_CHECK(cudaMemcpy(got.data(), d_logits.as<float>(), got.size() * sizeof(float),
                                 cudaMemcpyDeviceToHost));
  size_t mismatches = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::memcmp(&got[i], &expected[i], sizeof(float)) != 0 && ++mismatches <= 10) {
      ADD_FAILURE() << "row " << i / kVocab << " token " << i % kVocab << ": GPU " << got[i]
                    << ", host " << expected[i];
    }
  }
  EXPECT_EQ(mismatches, 0u);
}

TEST(CudaLogitsProcessing, MinPDrawsWhatTheHostSamplerDraws) {
  PACELINE_REQUIRE_GPU();
  constexpr int kRows = 3;
  std::vector<float> logits = normal_rows(kRows, 5);
  for (int64_t i = 0; i < kVocab; i += 911)
    logits[static_cast<size_t>(kVocab + i)] += 9.0f;  // peaks
  std::vector<SampleRow> rows;
  std::vector<int32_t> expected;
  int64_t position = 0;
  for (int r = 0; r < kRows; ++r) {
    for (double temperature : {0.5, 1.0, 1.8}) {
      for (double min_p : {0.001, 0.05, 0.3, 0.9, 1.0}) {
        for (int64_t top_k : {-1L, 3L, 500L}) {
          for (double top_p : {1.0, 0.8}) {
            SamplingParams p;
            p.temperature = temperature;
            p.min_p = min_p;
            p.top_k = top_k;
            p.top_p = top_p;
            testing::add_draw(rows, expected, logits, kVocab, r, p, 77, position);
            ++position;
          }
        }
      }
    }
  }
  const std::vector<int32_t> got = testing::sample_on_gpu(logits, kVocab, rows);
  testing::expect_same_draws(got, expected, rows);
}

TEST(CudaLogitsProcessing, ExecutorTokensAreTheHostsOnItsRawLogits) {
  PACELINE_REQUIRE_GPU();
  const ModelConfig config = testing::tiny_config();
  testing::TestWeights weights(config, 5);
  CudaExecutor gpu(config, weights, testing::small_executor_options(config, 256));
  const int64_t vocab = config.vocab_size;  // 97
  // Each sequence is its whole history, prompt then output (num_prompt_tokens splits it).
  const std::vector<std::vector<int32_t>> histories = {
      {1, 2, 3, 4, 5, 3, 3}, {7, 8, 9, 8}, {11, 12, 13}, {20, 21, 20, 22, 20}, {30, 31}};
  StepPlan raw;
  for (size_t i = 0; i < histories.size(); ++i) {
    raw.seqs.push_back(
        testing::make_seq(i + 1, histories[i], 0, {static_cast<int32_t>(i)}, i == 1 ? 2 : 1));
  }
  gpu.execute(raw);
  const std::vector<float> raw_logits = gpu.last_logits();

  StepPlan plan = raw;
  auto bias = std::make_shared<const std::vector<TokenBias>>(
      std::vector<TokenBias>{{4, 3.0f}, {40, -100.0f}, {96, 2.0f}});
  for (size_t i = 0; i < plan.seqs.size(); ++i) {
    ScheduledSeq& s = plan.seqs[i];
    s.history = histories[i];
    s.num_prompt_tokens = 2;
    s.seed = 100 + i;
  }
  plan.seqs[0].sampling.temperature = 0.0;  // greedy: the argmax is taken again
  plan.seqs[0].sampling.logit_bias = bias;
  plan.seqs[0].sampling.frequency_penalty = 2.0;
  plan.seqs[1].sampling.temperature = 0.9;  // two rows, both adjusted
  plan.seqs[1].sampling.presence_penalty = 1.5;
  plan.seqs[1].sampling.min_p = 0.1;
  plan.seqs[2].sampling.temperature = 1.2;
  plan.seqs[2].sampling.repetition_penalty = 1.7;
  plan.seqs[2].sampling.logit_bias = bias;
  plan.seqs[3].sampling.temperature = 0.7;
  plan.seqs[3].sampling.min_p = 0.3;        // min_p alone: nothing adjusted
  plan.seqs[4].sampling.temperature = 0.0;  // nothing at all: the forward's argmax
  const StepResult r = gpu.execute(plan);
  const std::vector<float> processed = gpu.last_logits();
  ASSERT_EQ(raw_logits.size(), static_cast<size_t>(6 * vocab));
  int row = 0;
  for (size_t s = 0; s < plan.seqs.size(); ++s) {
    const ScheduledSeq& seq = plan.seqs[s];
    ASSERT_EQ(r.seqs[s].tokens.size(), static_cast<size_t>(seq.num_logits));
    const int64_t first = seq.start_pos + static_cast<int64_t>(seq.tokens.size()) - seq.num_logits;
    for (int i = 0; i < seq.num_logits; ++i, ++row) {
      std::span<const float> l(raw_logits.data() + row * vocab, static_cast<size_t>(vocab));
      EXPECT_EQ(r.seqs[s].tokens[i], sample_processed(l, seq, first + i))
          << "sequence " << s << ", logit row " << i;
      std::vector<float> host(l.begin(), l.end());
      std::vector<LogitAdjustment> adjustments;
      append_logit_adjustments(seq.sampling, seq.history, seq.num_prompt_tokens, vocab, 0,
                               adjustments);
      apply_logit_adjustments(host, adjustments);
      EXPECT_EQ(0, std::memcmp(host.data(), processed.data() + row * vocab,
                               static_cast<size_t>(vocab) * sizeof(float)))
          << "processed logits of sequence " << s << ", row " << i;
    }
  }
  // The bias really decided the greedy row: token 40 is banned everywhere it was biased.
  EXPECT_NE(r.seqs[0].tokens[0], 40);
}

}  // namespace
}  // namespace paceline
#endif
