// Tensor parallelism's arithmetic on the CPU: the model split into N ranks (heads, KV heads, MLP
// columns, vocabulary), each rank's partial products summed in rank order where they meet, gives
// the unsplit model's logits to float tolerance, through prefill and decode steps over the paged
// cache; a split that does not divide the model is refused naming the field.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/error.h"
#include "exec/cpu/cpu_model.h"
#include "exec/cpu/tensor_parallel.h"
#include "test_model.h"

namespace paceline {
namespace {

using testing::BlockPool;
using testing::make_seq;

constexpr KvCacheShape kCache{64, 16};

// Four KV heads, so that two and four ranks both split it; a vocabulary of 96.
ModelConfig splittable_config(bool qk_norm) {
  ModelConfig c = testing::tiny_config(qk_norm, 4);
  c.vocab_size = 96;
  return c;
}

// Logits of a ragged prefill of three prompts, then of two decode steps of all three.
std::vector<float> prefill_then_decode(const ModelConfig& c, const Weights& w, int ranks) {
  CpuModel model(c, w, kCache, 2, ranks);
  BlockPool pool(kCache.num_blocks, /*shuffle_seed=*/11);
  std::vector<std::vector<int32_t>> tables(3);
  std::vector<std::vector<int32_t>> prompts = {testing::random_tokens(37, c.vocab_size, 1),
                                               testing::random_tokens(5, c.vocab_size, 2),
                                               testing::random_tokens(20, c.vocab_size, 3)};
  StepPlan plan;
  for (size_t i = 0; i < prompts.size(); ++i) {
    pool.cover(tables[i], static_cast<int64_t>(prompts[i].size()) + 2, kCache.block_size);
    plan.seqs.push_back(make_seq(i, prompts[i], 0, tables[i],
                                 static_cast<int32_t>(prompts[i].size())));
  }
  std::vector<float> all = model.forward(plan);
  for (int step = 0; step < 2; ++step) {
    StepPlan decode;
    for (size_t i = 0; i < prompts.size(); ++i) {
      const auto pos = static_cast<int64_t>(prompts[i].size()) + step;
      decode.seqs.push_back(make_seq(i, {static_cast<int32_t>((7 * i + step) % 90)}, pos,
                                     tables[i], 1));
    }
    const std::vector<float> logits = model.forward(decode);
    all.insert(all.end(), logits.begin(), logits.end());
  }
  return all;
}

TEST(TensorParallel, RanksReducedGiveTheUnsplitLogits) {
  for (bool qk_norm : {true, false}) {
    const ModelConfig c = splittable_config(qk_norm);
    const testing::TestWeights w(c, 21);
    const std::vector<float> whole = prefill_then_decode(c, w, 1);
    for (int ranks : {2, 4}) {
      const std::vector<float> split = prefill_then_decode(c, w, ranks);
      ASSERT_EQ(split.size(), whole.size());
      float scale = 0.0f;
      for (float v : whole) scale = std::max(scale, std::abs(v));
      EXPECT_LE(testing::max_abs_diff(split, whole), 1e-5f * std::max(1.0f, scale))
          << ranks << " ranks, qk_norm " << qk_norm;
    }
  }
}

TEST(TensorParallel, EachRankHoldsItsSlices) {
  const ModelConfig c = splittable_config(true);
  const testing::TestWeights w(c, 5);
  const CpuWeights full = cpu_weights_convert(c, w);
  const TensorParallelShape shape = tensor_parallel_shape(c, 2);
  EXPECT_EQ(shape.heads, 2);
  EXPECT_EQ(shape.kv_heads, 2);
  EXPECT_EQ(shape.intermediate, 40);
  EXPECT_EQ(shape.vocab, 48);
  const CpuRankWeights r1 = shard_weights(c, full, shape, 1);
  const int64_t hidden = c.hidden_size;
  const CpuLayerWeights& l = r1.layers[0];
  // Rank 1's first query row is the full matrix's row of head 2; its first key row is KV head
  // 2's; its o_proj row 0 starts at the full row's column of head 2.
  EXPECT_EQ(l.qkv_proj[0], full.layers[0].qkv_proj[static_cast<size_t>(2 * 16 * hidden)]);
  EXPECT_EQ(l.qkv_proj[static_cast<size_t>(2 * 16 * hidden)],
            full.layers[0].qkv_proj[static_cast<size_t>((c.q_size() + 2 * 16) * hidden)]);
  EXPECT_EQ(l.o_proj[0], full.layers[0].o_proj[2 * 16]);
  EXPECT_EQ(l.o_proj.size(), static_cast<size_t>(hidden * 2 * 16));
  EXPECT_EQ(l.down_proj.size(), static_cast<size_t>(hidden * 40));
  EXPECT_EQ(r1.lm_head[0], full.lm_head_data()[48 * hidden]);
  // The embedding's rows of its half of the vocabulary, not the whole table.
  EXPECT_EQ(r1.embed_tokens.size(), static_cast<size_t>(48 * hidden));
  EXPECT_EQ(r1.embed_tokens[0], full.embed_tokens[static_cast<size_t>(48 * hidden)]);
}

TEST(TensorParallel, TheRanksEmbeddingsSumToEachTokensRow) {
  const ModelConfig c = splittable_config(true);
  const testing::TestWeights w(c, 6);
  const CpuWeights full = cpu_weights_convert(c, w);
  const int64_t hidden = c.hidden_size;
  std::vector<int32_t> tokens(static_cast<size_t>(c.vocab_size));
  for (int32_t t = 0; t < c.vocab_size; ++t) tokens[static_cast<size_t>(t)] = t;
  for (int world : {2, 4}) {
    const TensorParallelShape shape = tensor_parallel_shape(c, world);
    std::vector<std::vector<float>> parts(static_cast<size_t>(world));
    for (int rank = 0; rank < world; ++rank) {
      const CpuRankWeights rw = shard_weights(c, full, shape, rank);
      std::vector<float>& part = parts[static_cast<size_t>(rank)];
      part.assign(static_cast<size_t>(c.vocab_size * hidden), -1.0f);
      embed_rank(rw, shape, rank, tokens, hidden, part.data());
      // A token of another rank's rows embeds as zeros here.
      for (int32_t t = 0; t < c.vocab_size; ++t) {
        const bool mine = t / shape.vocab == rank;
        for (int64_t i = 0; i < hidden; ++i) {
          const float got = part[static_cast<size_t>(t * hidden + i)];
          const float want = mine ? full.embed_tokens[static_cast<size_t>(t * hidden + i)] : 0.0f;
          ASSERT_EQ(got, want) << world << " ranks, rank " << rank << ", token " << t;
        }
      }
    }
    std::vector<float> sum(static_cast<size_t>(c.vocab_size * hidden), 0.0f);
    all_reduce_add(parts, c.vocab_size * hidden, sum.data());
    EXPECT_EQ(sum, full.embed_tokens) << world << " ranks";
  }
}

TEST(TensorParallel, ASplitThatDoesNotDivideIsRefusedNamingTheField) {
  const ModelConfig c = testing::tiny_config(true, 2);  // 4 heads, 2 KV heads, 80 columns, 97
  auto message = [&](int ranks) {
    try {
      tensor_parallel_shape(c, ranks);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(message(3).find("num_attention_heads 4"), std::string::npos) << message(3);
  EXPECT_NE(message(4).find("num_key_value_heads 2"), std::string::npos) << message(4);
  EXPECT_NE(message(2).find("vocab_size 97"), std::string::npos) << message(2);
  EXPECT_NE(message(0).find("at least 1"), std::string::npos) << message(0);
  EXPECT_EQ(message(1), "accepted");
}

}  // namespace
}  // namespace paceline
