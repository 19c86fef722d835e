// A rank's weight slices as rectangles of Hugging Face's tensors (model/tensor_parallel_slices.h),
// the source the CUDA ranks load from: they are exactly the CPU split's slices (which
// tensor_parallel_test and the HF parity tests check against the unsplit model and HF's logits),
// at one rank every slice is its whole tensor, and the bytes of a bf16 slice are the source's.
#include "model/tensor_parallel_slices.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/error.h"
#include "exec/cpu/tensor_parallel.h"
#include "test_model.h"

namespace paceline {
namespace {

// Four KV heads and a vocabulary of 96, so that 2 and 4 ranks split it.
ModelConfig splittable_config(bool tied) {
  ModelConfig c = testing::tiny_config(true, 4);
  c.vocab_size = 96;
  c.tie_word_embeddings = tied;
  return c;
}

// The slices stacked as float32, in order.
std::vector<float> stacked(const Weights& w, const std::vector<TensorSlice>& slices) {
  std::vector<float> out;
  for (const TensorSlice& s : slices) {
    std::vector<float> part(static_cast<size_t>(s.numel()));
    slice_to_f32(slice_source(w, s), s, part.data());
    out.insert(out.end(), part.begin(), part.end());
  }
  return out;
}

TEST(TensorParallelSlices, AreTheCpuSplitsSlicesOnEveryRank) {
  for (bool tied : {false, true}) {
    const ModelConfig c = splittable_config(tied);
    const testing::TestWeights w(c, 9);
    const CpuWeights full = cpu_weights_convert(c, w);
    for (int world : {1, 2, 4}) {
      const TensorParallelShape shape = tensor_parallel_shape(c, world);
      for (int rank = 0; rank < world; ++rank) {
        const CpuRankWeights cpu = shard_weights(c, full, shape, rank);
        for (int64_t layer = 0; layer < c.num_hidden_layers; ++layer) {
          const RankLayerSlices s = rank_layer_slices(c, shape, rank, layer);
          const CpuLayerWeights& l = cpu.layers[static_cast<size_t>(layer)];
          const std::string at = "world " + std::to_string(world) + " rank " +
                                 std::to_string(rank) + " layer " + std::to_string(layer);
          EXPECT_EQ(stacked(w, s.qkv), l.qkv_proj) << at;
          EXPECT_EQ(stacked(w, {s.o_proj}), l.o_proj) << at;
          EXPECT_EQ(stacked(w, s.gate_up), l.gate_up_proj) << at;
          EXPECT_EQ(stacked(w, {s.down}), l.down_proj) << at;
        }
        EXPECT_EQ(stacked(w, {rank_lm_head_slice(c, shape, rank)}), cpu.lm_head)
            << "world " << world << " rank " << rank << " tied " << tied;
        EXPECT_EQ(stacked(w, {rank_embedding_slice(c, shape, rank)}), cpu.embed_tokens)
            << "world " << world << " rank " << rank << " tied " << tied;
      }
    }
  }
}

TEST(TensorParallelSlices, OneRankTakesEveryTensorWhole) {
  const ModelConfig c = splittable_config(false);
  const TensorParallelShape one = tensor_parallel_shape(c, 1);
  for (int64_t layer = 0; layer < c.num_hidden_layers; ++layer) {
    const RankLayerSlices s = rank_layer_slices(c, one, 0, layer);
    for (const TensorSlice& t : s.qkv) EXPECT_TRUE(t.whole()) << t.name;
    for (const TensorSlice& t : s.gate_up) EXPECT_TRUE(t.whole()) << t.name;
    EXPECT_TRUE(s.o_proj.whole());
    EXPECT_TRUE(s.down.whole());
  }
  EXPECT_TRUE(rank_lm_head_slice(c, one, 0).whole());
  EXPECT_TRUE(rank_embedding_slice(c, one, 0).whole());
  EXPECT_EQ(rank_lm_head_slice(c, one, 0).name, "lm_head.weight");
  // Two ranks: rank 1's o_proj is the right half of every row.
  const TensorSlice o = rank_layer_slices(c, tensor_parallel_shape(c, 2), 1, 0).o_proj;
  EXPECT_FALSE(o.whole());
  EXPECT_EQ(o.col0, c.q_size() / 2);
  EXPECT_EQ(o.cols, c.q_size() / 2);
  EXPECT_EQ(o.rows, c.hidden_size);
}

TEST(TensorParallelSlices, ARanksConfigHasItsWidthsAndTheWholeVocabulary) {
  const ModelConfig c = splittable_config(false);
  const ModelConfig two = rank_model_config(c, tensor_parallel_shape(c, 2));
  EXPECT_EQ(two.q_size(), c.q_size() / 2);
  EXPECT_EQ(two.kv_size(), c.kv_size() / 2);
  EXPECT_EQ(two.intermediate_size, c.intermediate_size / 2);
  EXPECT_EQ(two.kv_bytes_per_token(2), c.kv_bytes_per_token(2) / 2);  // a rank's KV cache
  EXPECT_EQ(two.vocab_size, c.vocab_size);  // the logits are gathered whole
  EXPECT_EQ(two.hidden_size, c.hidden_size);
  EXPECT_EQ(two.head_dim, c.head_dim);
  const ModelConfig one = rank_model_config(c, tensor_parallel_shape(c, 1));
  EXPECT_EQ(one.q_size(), c.q_size());
  EXPECT_EQ(one.kv_size(), c.kv_size());
  EXPECT_EQ(one.intermediate_size, c.intermediate_size);
}

TEST(TensorParallelSlices, ABf16SliceCopiesTheSourceBytes) {
  const ModelConfig c = splittable_config(false);
  const auto w = make_dummy_weights(c, 3, DType::kBF16);
  const TensorParallelShape shape = tensor_parallel_shape(c, 2);
  const TensorSlice down = rank_layer_slices(c, shape, 1, 0).down;  // columns: a gather
  const TensorView& view = slice_source(*w, down);
  std::vector<uint16_t> bytes(static_cast<size_t>(down.numel()));
  slice_copy_bytes(view, down, bytes.data());
  std::vector<float> f32(static_cast<size_t>(down.numel()));
  slice_to_f32(view, down, f32.data());
  for (int64_t r = 0; r < down.rows; ++r) {
    for (int64_t j = 0; j < down.cols; ++j) {
      const int64_t i = r * down.cols + j;
      const uint16_t want =
          static_cast<const uint16_t*>(view.data)[r * down.total_cols + down.col0 + j];
      ASSERT_EQ(bytes[static_cast<size_t>(i)], want) << r << "," << j;
      // bf16 is float32's top half.
      const uint32_t as_f32 = static_cast<uint32_t>(want) << 16;
      float expect = 0.0f;
      std::memcpy(&expect, &as_f32, sizeof expect);
      ASSERT_EQ(f32[static_cast<size_t>(i)], expect);
    }
  }
}

TEST(TensorParallelSlices, ATensorOfAnotherShapeIsAnErrorNamingIt) {
  const ModelConfig c = splittable_config(false);
  const testing::TestWeights w(c, 1);
  TensorSlice wrong = rank_layer_slices(c, tensor_parallel_shape(c, 2), 0, 0).o_proj;
  wrong.total_cols += 1;  // as if the config said one more column than the checkpoint has
  try {
    slice_source(w, wrong);
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("model.layers.0.self_attn.o_proj.weight"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace paceline
