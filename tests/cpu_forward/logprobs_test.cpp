// Logprobs of a logit row (src/exec/logprobs.h) and the executors that report them: log_softmax
// in double, the top k descending with ties at the lower id, and only for rows that ask.
#include "exec/logprobs.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "base/error.h"
#include "exec/cpu/cpu_executor.h"
#include "exec/null_executor.h"
#include "test_model.h"

namespace paceline {
namespace {

using testing::BlockPool;
using testing::make_seq;
using testing::random_tokens;
using testing::TestWeights;
using testing::tiny_config;

TEST(Logprobs, ValuesAreLogSoftmaxOfTheRow) {
  const std::vector<float> logits = {1.0f, 3.0f, -2.0f, 3.0f, 0.5f};
  double z = 0.0;
  for (float l : logits) z += std::exp(static_cast<double>(l));
  EXPECT_NEAR(log_sum_exp(logits), std::log(z), 1e-12);
  const RowLogprobs row = row_logprobs(logits, 2, 3);
  EXPECT_EQ(row.chosen.token, 2);
  EXPECT_NEAR(row.chosen.logprob, -2.0 - std::log(z), 1e-6);
  // The two 3.0s tie: the lower id ranks first.
  ASSERT_EQ(row.top.size(), 3u);
  EXPECT_EQ(row.top[0].token, 1);
  EXPECT_EQ(row.top[1].token, 3);
  EXPECT_EQ(row.top[2].token, 0);
  EXPECT_NEAR(row.top[2].logprob, 1.0 - std::log(z), 1e-6);
}

TEST(Logprobs, LargeLogitsDoNotOverflowAndTopIsCappedByTheRow) {
  const std::vector<float> logits = {1000.0f, 1000.0f, -std::numeric_limits<float>::infinity()};
  EXPECT_NEAR(log_sum_exp(logits), 1000.0 + std::log(2.0), 1e-9);
  const RowLogprobs row = row_logprobs(logits, 0, 20);
  EXPECT_NEAR(row.chosen.logprob, -std::log(2.0), 1e-6);
  EXPECT_EQ(row.top.size(), 3u);
  EXPECT_TRUE(std::isinf(row.top[2].logprob));
  EXPECT_THROW(row_logprobs(logits, 3, 1), Error);
}

TEST(Logprobs, TopKMatchesASortOnAVocabularyWithManyTies) {
  std::vector<float> logits(5000);
  for (size_t i = 0; i < logits.size(); ++i) logits[i] = static_cast<float>((i * 7919) % 13);
  const std::vector<TokenLogprob> top = top_logprobs(logits, log_sum_exp(logits), 20);
  std::vector<int32_t> ids(logits.size());
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(i);
  std::stable_sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
  ASSERT_EQ(top.size(), 20u);
  for (size_t k = 0; k < 20; ++k) EXPECT_EQ(top[k].token, ids[k]) << "rank " << k;
}

TEST(CpuExecutorLogprobs, OnlyRowsThatAskGetThemAndTheyMatchTheModelsLogits) {
  ModelConfig c = tiny_config();
  TestWeights w(c, 1);
  constexpr KvCacheShape kCache{32, 8};
  CpuExecutor executor(c, w, kCache, 2);
  CpuModel model(c, w, kCache, 2);
  StepPlan plan;
  BlockPool pool(kCache.num_blocks);
  for (uint64_t id : {5, 9}) {
    std::vector<int32_t> table;
    pool.cover(table, 12, kCache.block_size);
    plan.seqs.push_back(make_seq(id, random_tokens(12, c.vocab_size, id), 0, table, 2));
  }
  plan.seqs[0].sampling.temperature = 0.9;  // sampled: the chosen token is the drawn one
  plan.seqs[0].seed = 3;
  plan.seqs[0].num_logprobs = 4;
  const StepResult result = executor.execute(plan);
  const std::vector<float> logits = model.forward(plan);
  EXPECT_TRUE(result.seqs[1].logprobs.empty());
  ASSERT_EQ(result.seqs[0].logprobs.size(), 2u);
  for (size_t r = 0; r < 2; ++r) {
    std::span<const float> row(logits.data() + r * c.vocab_size, static_cast<size_t>(c.vocab_size));
    const RowLogprobs want = row_logprobs(row, result.seqs[0].tokens[r], 4);
    const RowLogprobs& got = result.seqs[0].logprobs[r];
    EXPECT_EQ(got.chosen.token, result.seqs[0].tokens[r]);
    EXPECT_FLOAT_EQ(got.chosen.logprob, want.chosen.logprob);
    ASSERT_EQ(got.top.size(), 4u);
    for (size_t k = 0; k < 4; ++k) EXPECT_EQ(got.top[k].token, want.top[k].token);
  }
}

TEST(NullExecutorLogprobs, AreAFixedGeometricDistributionFromTheChosenToken) {
  NullExecutor executor(KvCacheShape{8, 16}, 151936, std::vector<int64_t>{151645});
  StepPlan plan;
  plan.seqs.push_back(make_seq(1, {9}, 40, {0, 1, 2}, 1));
  plan.seqs[0].num_logprobs = 3;
  plan.seqs.push_back(make_seq(2, {9}, 40, {3, 4, 5}, 1));
  const StepResult r = executor.execute(plan);
  EXPECT_TRUE(r.seqs[1].logprobs.empty());
  ASSERT_EQ(r.seqs[0].logprobs.size(), 1u);
  const RowLogprobs& row = r.seqs[0].logprobs[0];
  EXPECT_EQ(row.chosen.token, r.seqs[0].tokens[0]);
  ASSERT_EQ(row.top.size(), 3u);
  EXPECT_EQ(row.top[0].token, row.chosen.token);
  for (size_t k = 0; k < 3; ++k) {
    EXPECT_NEAR(row.top[k].logprob, -std::log(2.0) * static_cast<double>(k + 1), 1e-6);
  }
  EXPECT_NE(row.top[1].token, row.top[0].token);
}

}  // namespace
}  // namespace paceline
