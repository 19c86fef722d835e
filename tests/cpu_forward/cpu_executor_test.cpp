// CpuExecutor: one sampled token per requested logit row, sampled at that row's position.
#include "exec/cpu/cpu_executor.h"

#include <gtest/gtest.h>

#include "exec/sampler.h"
#include "test_model.h"

namespace paceline {
namespace {

using testing::BlockPool;
using testing::make_seq;
using testing::random_tokens;
using testing::TestWeights;
using testing::tiny_config;

constexpr KvCacheShape kCache{32, 8};

TEST(CpuExecutor, GreedyTokensAreTheArgmaxOfTheModelsLogits) {
  ModelConfig c = tiny_config();
  TestWeights w(c, 1);
  CpuExecutor executor(c, w, kCache, 2);
  CpuModel model(c, w, kCache, 2);
  EXPECT_EQ(executor.kv_cache_shape().num_blocks, 32);

  StepPlan plan;
  plan.step_id = 17;
  BlockPool pool(kCache.num_blocks);
  for (uint64_t id : {5, 9}) {
    std::vector<int32_t> table;
    pool.cover(table, 12, kCache.block_size);
    plan.seqs.push_back(make_seq(id, random_tokens(12, c.vocab_size, id), 0, table, 3));
    plan.seqs.back().sampling.temperature = 0.0;
  }
  StepResult result = executor.execute(plan);
  std::vector<float> logits = model.forward(plan);

  EXPECT_EQ(result.step_id, 17u);
  EXPECT_GT(result.step_time_ns, 0);
  ASSERT_EQ(result.seqs.size(), 2u);
  for (size_t s = 0; s < 2; ++s) {
    EXPECT_EQ(result.seqs[s].request_id, plan.seqs[s].request_id);
    ASSERT_EQ(result.seqs[s].tokens.size(), 3u);
    for (size_t r = 0; r < 3; ++r) {
      std::span<const float> row(logits.data() + (s * 3 + r) * c.vocab_size,
                                 static_cast<size_t>(c.vocab_size));
      EXPECT_EQ(result.seqs[s].tokens[r], sample_greedy(row));
    }
  }
}

TEST(CpuExecutor, SampledTokensDoNotDependOnTheBatch) {
  ModelConfig c = tiny_config();
  TestWeights w(c, 2);
  std::vector<int32_t> prompt = random_tokens(10, c.vocab_size, 3);
  auto seq = [&](uint64_t id, std::vector<int32_t> table) {
    ScheduledSeq s = make_seq(id, prompt, 0, std::move(table), 10);
    s.sampling.temperature = 1.0;
    s.seed = 99;
    return s;
  };

  CpuExecutor alone(c, w, kCache, 1);
  StepPlan one;
  one.seqs = {seq(1, {0, 1})};
  std::vector<int32_t> tokens_alone = alone.execute(one).seqs[0].tokens;

  CpuExecutor batched(c, w, kCache, 2);
  StepPlan many;
  many.seqs = {make_seq(7, random_tokens(5, c.vocab_size, 4), 0, {3}, 1), seq(1, {5, 6}),
               make_seq(8, random_tokens(9, c.vocab_size, 5), 0, {7, 8}, 2)};
  StepResult r = batched.execute(many);
  EXPECT_EQ(r.seqs[1].tokens, tokens_alone);
  EXPECT_EQ(r.seqs[0].tokens.size(), 1u);
  EXPECT_EQ(r.seqs[2].tokens.size(), 2u);

  // Draws at different positions differ: over 10 rows of random logits not all tokens agree.
  bool all_same = true;
  for (int32_t t : tokens_alone) all_same = all_same && t == tokens_alone[0];
  EXPECT_FALSE(all_same);
}

}  // namespace
}  // namespace paceline
