// NullExecutor: one token per requested logit row, instantly, never an EOS id.
#include "exec/null_executor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "base/error.h"
#include "test_model.h"

namespace paceline {
namespace {

using testing::make_seq;

constexpr KvCacheShape kCache{64, 16};
const std::vector<int64_t> kQwen3Eos = {151645, 151643};

TEST(NullExecutor, AnswersEveryLogitRowWithOneTokenAndNoTime) {
  NullExecutor executor(kCache, 151936, kQwen3Eos);
  EXPECT_EQ(executor.kv_cache_shape().num_blocks, 64);
  EXPECT_EQ(executor.kv_cache_shape().block_size, 16);

  StepPlan plan;
  plan.step_id = 7;
  plan.kind = ForwardKind::kMixed;
  plan.seqs.push_back(make_seq(3, std::vector<int32_t>(64, 5), 0, {0, 1, 2, 3}, 1));  // prefill
  plan.seqs.push_back(make_seq(4, std::vector<int32_t>(32, 5), 0, {4, 5}, 0));    // middle chunk
  plan.seqs.push_back(make_seq(5, {9}, 70, {6, 7, 8, 9, 10}, 1));                 // decode
  plan.seqs.push_back(make_seq(6, std::vector<int32_t>(4, 9), 20, {11, 12}, 4));  // verify
  StepResult result = executor.execute(plan);

  EXPECT_EQ(result.step_id, 7u);
  EXPECT_EQ(result.step_time_ns, 0);
  ASSERT_EQ(result.seqs.size(), plan.seqs.size());
  for (size_t i = 0; i < plan.seqs.size(); ++i) {
    EXPECT_EQ(result.seqs[i].request_id, plan.seqs[i].request_id);
    EXPECT_EQ(result.seqs[i].tokens.size(), static_cast<size_t>(plan.seqs[i].num_logits));
    for (int32_t t : result.seqs[i].tokens) {
      EXPECT_GE(t, 1000);
      EXPECT_LT(t, 2000);
    }
  }
  // Consecutive positions get consecutive tokens of the cycle, so streamed text varies.
  const std::vector<int32_t>& verify = result.seqs[3].tokens;
  for (size_t r = 1; r < verify.size(); ++r) EXPECT_NE(verify[r], verify[r - 1]);
}

TEST(NullExecutor, NeverProducesAnEosId) {
  // EOS ids placed inside the cycle's range, and a vocabulary too small for it.
  const std::vector<int64_t> eos = {1000, 1500, 1999, 3, 4};
  for (int64_t vocab : {151936, 1600, 10}) {
    NullExecutor executor(kCache, vocab, eos);
    StepPlan plan;
    plan.seqs.push_back(make_seq(1, std::vector<int32_t>(3000, 1), 0, {}, 3000));
    StepResult result = executor.execute(plan);
    ASSERT_EQ(result.seqs.size(), 1u);
    ASSERT_EQ(result.seqs[0].tokens.size(), 3000u);
    for (int32_t t : result.seqs[0].tokens) {
      ASSERT_TRUE(std::find(eos.begin(), eos.end(), t) == eos.end())
          << "vocab " << vocab << ": " << t;
      ASSERT_GE(t, 0);
      ASSERT_LT(t, vocab);
    }
  }
}

TEST(NullExecutor, RejectsAVocabularyOfOnlyEos) {
  const std::vector<int64_t> eos = {0, 1};
  EXPECT_THROW(NullExecutor(kCache, 2, eos), Error);
  EXPECT_THROW(NullExecutor(KvCacheShape{0, 16}, 151936, kQwen3Eos), Error);
}

}  // namespace
}  // namespace paceline
