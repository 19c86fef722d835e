// CpuModel, the reference forward: what one step computes, however the plan batches, chunks and
// pages it.
#include "exec/cpu/cpu_model.h"

#include <gtest/gtest.h>

#include "base/error.h"
#include "naive_forward.h"
#include "test_model.h"

namespace paceline {
namespace {

using testing::BlockPool;
using testing::logit_rows;
using testing::make_seq;
using testing::max_abs_diff;
using testing::naive_forward;
using testing::random_tokens;
using testing::TestWeights;
using testing::tiny_config;

constexpr KvCacheShape kCache{64, 4};  // small blocks, so every sequence spans several

StepPlan plan_of(std::vector<ScheduledSeq> seqs) {
  StepPlan plan;
  plan.seqs = std::move(seqs);
  return plan;
}

// All-position logits of `tokens` as a one-shot prefill in a fresh model.
std::vector<float> prefill_alone(const ModelConfig& c, const Weights& w,
                                 const std::vector<int32_t>& tokens) {
  CpuModel model(c, w, kCache, 2);
  BlockPool pool(kCache.num_blocks);
  std::vector<int32_t> table;
  pool.cover(table, static_cast<int64_t>(tokens.size()), kCache.block_size);
  auto n = static_cast<int32_t>(tokens.size());
  return model.forward(plan_of({make_seq(1, tokens, 0, table, n)}));
}

struct Variant {
  const char* name;
  bool qk_norm;
  int64_t kv_heads;
  bool llama3_scaling;
};
void PrintTo(const Variant& v, std::ostream* os) {
  *os << v.name;
}

ModelConfig variant_config(const Variant& v) {
  ModelConfig c = tiny_config(v.qk_norm, v.kv_heads);
  if (v.llama3_scaling) {
    // A short original context so that all three bands of the rule occur at head_dim 16.
    c.rope_scaling = RopeScaling{8.0, 1.0, 4.0, 32};
  }
  return c;
}

class CpuModelVariant : public ::testing::TestWithParam<Variant> {};

TEST_P(CpuModelVariant, AgreesWithNaiveLoopsAtEveryPosition) {
  ModelConfig c = variant_config(GetParam());
  TestWeights w(c, 7);
  std::vector<int32_t> tokens = random_tokens(37, c.vocab_size, 11);
  std::vector<float> expected = naive_forward(c, w, tokens);
  std::vector<float> got = prefill_alone(c, w, tokens);
  EXPECT_LE(max_abs_diff(got, expected), 1e-4f);
}

INSTANTIATE_TEST_SUITE_P(Shapes, CpuModelVariant,
                         ::testing::Values(Variant{"qwen3_gqa", true, 2, false},
                                           Variant{"qwen3_mqa", true, 1, false},
                                           Variant{"llama_mha", false, 4, false},
                                           Variant{"llama_gqa_rope_scaled", false, 2, true},
                                           Variant{"qwen3_rope_scaled", true, 2, true}),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(CpuModel, RaggedBatchEqualsEachSequenceAlone) {
  ModelConfig c = tiny_config();
  TestWeights w(c, 1);
  std::vector<std::vector<int32_t>> prompts = {random_tokens(1, c.vocab_size, 1),
                                               random_tokens(9, c.vocab_size, 2),
                                               random_tokens(23, c.vocab_size, 3)};
  CpuModel model(c, w, kCache, 2);
  BlockPool pool(kCache.num_blocks);
  std::vector<ScheduledSeq> seqs;
  for (size_t i = 0; i < prompts.size(); ++i) {
    std::vector<int32_t> table;
    pool.cover(table, static_cast<int64_t>(prompts[i].size()), kCache.block_size);
    seqs.push_back(make_seq(i, prompts[i], 0, table, static_cast<int32_t>(prompts[i].size())));
  }
  std::vector<float> batched = model.forward(plan_of(seqs));

  int64_t row = 0;
  for (const auto& p : prompts) {
    auto n = static_cast<int64_t>(p.size());
    EXPECT_LE(max_abs_diff(logit_rows(batched, c.vocab_size, row, n), prefill_alone(c, w, p)),
              1e-5f);
    row += n;
  }
  EXPECT_EQ(row * c.vocab_size, static_cast<int64_t>(batched.size()));
}

TEST(CpuModel, ChunkedPrefillReadsEarlierChunksThroughTheBlockTable) {
  ModelConfig c = tiny_config();
  TestWeights w(c, 2);
  std::vector<int32_t> prompt = random_tokens(30, c.vocab_size, 5);
  std::vector<float> one_shot = prefill_alone(c, w, prompt);

  CpuModel model(c, w, kCache, 2);
  BlockPool pool(kCache.num_blocks, /*shuffle_seed=*/9);
  std::vector<int32_t> table;
  // Chunk boundaries fall inside blocks (block size 4) on purpose.
  const std::vector<std::pair<int64_t, int64_t>> chunks = {{0, 11}, {11, 18}, {18, 30}};
  for (auto [begin, end] : chunks) {
    pool.cover(table, end, kCache.block_size);
    std::vector<int32_t> part(prompt.begin() + begin, prompt.begin() + end);
    bool last = end == 30;
    std::vector<float> got = model.forward(
        plan_of({make_seq(1, part, begin, table, last ? static_cast<int32_t>(end - begin) : 0)}));
    if (!last) {
      EXPECT_TRUE(got.empty());  // a middle chunk asks for no logits
      continue;
    }
    EXPECT_LE(max_abs_diff(got, logit_rows(one_shot, c.vocab_size, begin, end - begin)), 1e-5f);
  }
}

TEST(CpuModel, BlockPlacementDoesNotChangeLogits) {
  ModelConfig c = tiny_config();
  TestWeights w(c, 3);
  std::vector<int32_t> prompt = random_tokens(26, c.vocab_size, 6);
  std::vector<float> results[2];
  for (int shuffled = 0; shuffled < 2; ++shuffled) {
    CpuModel model(c, w, kCache, 2);
    BlockPool pool(kCache.num_blocks, shuffled ? 1234 : 0);
    std::vector<int32_t> table;
    pool.cover(table, 26, kCache.block_size);
    if (shuffled) {
      EXPECT_FALSE(std::is_sorted(table.begin(), table.end()));
    }
    results[shuffled] = model.forward(plan_of({make_seq(1, prompt, 0, table, 26)}));
  }
  EXPECT_EQ(results[0], results[1]);  // the same arithmetic, only the addresses differ
}

TEST(CpuModel, DecodeStepsEqualTheLastRowsOfALongerPrefill) {
  ModelConfig c = tiny_config();
  TestWeights w(c, 4);
  std::vector<int32_t> tokens = random_tokens(24, c.vocab_size, 7);
  std::vector<float> one_shot = prefill_alone(c, w, tokens);

  CpuModel model(c, w, kCache, 2);
  BlockPool pool(kCache.num_blocks, 77);
  std::vector<int32_t> table;
  pool.cover(table, 17, kCache.block_size);
  model.forward(plan_of({make_seq(1, {tokens.begin(), tokens.begin() + 17}, 0, table, 1)}));
  for (int64_t pos = 17; pos < 24; ++pos) {
    pool.cover(table, pos + 1, kCache.block_size);
    std::vector<float> got = model.forward(plan_of({make_seq(1, {tokens[pos]}, pos, table, 1)}));
    EXPECT_LE(max_abs_diff(got, logit_rows(one_shot, c.vocab_size, pos, 1)), 1e-5f)
        << "position " << pos;
  }
}

TEST(CpuModel, MixedStepOfDecodesAndPrefillChunks) {
  ModelConfig c = tiny_config();
  TestWeights w(c, 5);
  std::vector<int32_t> a = random_tokens(13, c.vocab_size, 21);
  std::vector<int32_t> b = random_tokens(20, c.vocab_size, 22);
  std::vector<int32_t> d = random_tokens(6, c.vocab_size, 23);

  CpuModel model(c, w, kCache, 2);
  BlockPool pool(kCache.num_blocks, 5);
  std::vector<int32_t> ta, tb, td;
  pool.cover(ta, 12, kCache.block_size);
  pool.cover(tb, 8, kCache.block_size);
  model.forward(plan_of({make_seq(1, {a.begin(), a.begin() + 12}, 0, ta, 1),
                         make_seq(2, {b.begin(), b.begin() + 8}, 0, tb, 0)}));
  // One step: a decodes its 13th token, b prefills 12 more, d arrives whole.
  pool.cover(ta, 13, kCache.block_size);
  pool.cover(tb, 20, kCache.block_size);
  pool.cover(td, 6, kCache.block_size);
  std::vector<float> got = model.forward(
      plan_of({make_seq(1, {a[12]}, 12, ta, 1), make_seq(2, {b.begin() + 8, b.end()}, 8, tb, 3),
               make_seq(3, d, 0, td, 2)}));
  const int64_t v = c.vocab_size;
  ASSERT_EQ(static_cast<int64_t>(got.size()), 6 * v);
  EXPECT_LE(max_abs_diff(logit_rows(got, v, 0, 1), logit_rows(prefill_alone(c, w, a), v, 12, 1)),
            1e-5f);
  EXPECT_LE(max_abs_diff(logit_rows(got, v, 1, 3), logit_rows(prefill_alone(c, w, b), v, 17, 3)),
            1e-5f);
  EXPECT_LE(max_abs_diff(logit_rows(got, v, 4, 2), logit_rows(prefill_alone(c, w, d), v, 4, 2)),
            1e-5f);
}

TEST(CpuModel, NumLogitsSelectsTheLastRows) {
  ModelConfig c = tiny_config(false, 2);
  TestWeights w(c, 6);
  std::vector<int32_t> prompt = random_tokens(10, c.vocab_size, 8);
  std::vector<float> all = prefill_alone(c, w, prompt);
  for (int32_t k : {0, 1, 4, 10}) {
    CpuModel model(c, w, kCache, 1);
    BlockPool pool(kCache.num_blocks);
    std::vector<int32_t> table;
    pool.cover(table, 10, kCache.block_size);
    std::vector<float> got = model.forward(plan_of({make_seq(1, prompt, 0, table, k)}));
    ASSERT_EQ(static_cast<int64_t>(got.size()), k * c.vocab_size) << "num_logits " << k;
    EXPECT_LE(max_abs_diff(got, logit_rows(all, c.vocab_size, 10 - k, k)), 1e-5f);
  }
}

TEST(CpuModel, Llama3RopeScalingChangesTheLogits) {
  ModelConfig plain = tiny_config(false, 2);
  ModelConfig scaled = plain;
  scaled.rope_scaling = RopeScaling{8.0, 1.0, 4.0, 32};
  TestWeights w(plain, 9);  // same tensors: scaling has no weights
  std::vector<int32_t> prompt = random_tokens(20, plain.vocab_size, 9);
  std::vector<float> a = prefill_alone(plain, w, prompt);
  std::vector<float> b = prefill_alone(scaled, w, prompt);
  // Position 0 has no rotation, so its logits agree; later positions must not.
  EXPECT_LE(
      max_abs_diff(logit_rows(a, plain.vocab_size, 0, 1), logit_rows(b, plain.vocab_size, 0, 1)),
      1e-6f);
  EXPECT_GT(max_abs_diff(a, b), 1e-3f);
}

TEST(CpuModel, RejectsMalformedPlans) {
  ModelConfig c = tiny_config();
  TestWeights w(c, 10);
  CpuModel model(c, w, kCache, 1);
  // Token outside the vocabulary.
  EXPECT_THROW(
      model.forward(plan_of({make_seq(1, {static_cast<int32_t>(c.vocab_size)}, 0, {0}, 1)})),
      Error);
  // Block table too short for 5 positions at block size 4.
  EXPECT_THROW(model.forward(plan_of({make_seq(1, {1, 2, 3, 4, 5}, 0, {0}, 1)})), Error);
  // Block id outside the cache.
  EXPECT_THROW(model.forward(plan_of({make_seq(1, {1}, 0, {64}, 1)})), Error);
  // More logits than tokens.
  EXPECT_THROW(model.forward(plan_of({make_seq(1, {1, 2}, 0, {0}, 3)})), Error);
  // An empty plan computes nothing.
  EXPECT_TRUE(model.forward(StepPlan{}).empty());
}

TEST(CpuModel, RejectsWeightsOfAnotherShape) {
  ModelConfig c = tiny_config();
  ModelConfig other = c;
  other.intermediate_size = 64;
  TestWeights w(other, 11);
  EXPECT_THROW(CpuModel(c, w, kCache, 1), Error);
}

}  // namespace
}  // namespace paceline
