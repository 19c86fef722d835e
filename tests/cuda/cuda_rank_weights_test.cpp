// A tensor-parallel rank's weights on the GPU (gpu_weights_upload with a rank): each matrix on the
// device holds exactly its host slices (model/tensor_parallel_slices.h, the CPU split's slices),
// stacked in order, as bf16: the source's bits for a bf16 checkpoint, float32 rounded to nearest
// for a float32 one; one rank of one holds every tensor whole.
#include <cstdint>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "cuda_test_util.h"

#if PACELINE_HAVE_CUDA
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "exec/cuda/gate_up_layout.h"
#include "exec/cuda/gpu_weights.h"
#include "exec/cuda/kernels.h"  // kSwigluTurn
#include "model/tensor_parallel_slices.h"

namespace paceline {
namespace {

// Four heads over four KV heads, 80 MLP columns, a vocabulary of 96: 1, 2 and 4 ranks divide it.
ModelConfig splittable_config() {
  ModelConfig c;
  c.name = "rank-weights-test";
  c.arch = ModelArch::kQwen3;
  c.vocab_size = 96;
  c.hidden_size = 48;
  c.intermediate_size = 80;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 4;
  c.head_dim = 16;
  c.max_position_embeddings = 4096;
  c.rms_norm_eps = 1e-6;
  c.rope_theta = 10000.0;
  c.tie_word_embeddings = false;
  c.qk_norm = true;
  c.torch_dtype = "bfloat16";
  return c;
}

std::vector<uint16_t> download(const cuda::DeviceBuffer& b) {
  std::vector<uint16_t> host(b.bytes() / 2);
  EXPECT_EQ(cudaMemcpy(host.data(), b.as<void>(), b.bytes(), cudaMemcpyDeviceToHost), cudaSuccess);
  return host;
}

// The slices' bf16 bits stacked in order, as the upload should have made them.
std::vector<uint16_t> expected(const Weights& w, const std::vector<TensorSlice>& slices) {
  std::vector<uint16_t> out;
  for (const TensorSlice& s : slices) {
    const TensorView& view = slice_source(w, s);
    std::vector<uint16_t> part(static_cast<size_t>(s.numel()));
    if (view.dtype == DType::kBF16) {
      slice_copy_bytes(view, s, part.data());
    } else {
      std::vector<float> f32(part.size());
      slice_to_f32(view, s, f32.data());
      for (size_t i = 0; i < part.size(); ++i) {
        const __nv_bfloat16 b = __float2bfloat16(f32[i]);
        std::memcpy(&part[i], &b, 2);
      }
    }
    out.insert(out.end(), part.begin(), part.end());
  }
  return out;
}

TEST(CudaRankWeights, EachMatrixHoldsItsRanksSlices) {
  PACELINE_REQUIRE_GPU();
  for (const int64_t intermediate : {80, 256}) {  // 256: in turns of 64 up to two ranks
    ModelConfig c = splittable_config();
    c.intermediate_size = intermediate;
    for (const DType dtype : {DType::kBF16, DType::kF32}) {
      const auto w = make_dummy_weights(c, 17, dtype);
      for (int world : {1, 2, 4}) {
        const TensorParallelShape shape = tensor_parallel_shape(c, world);
        for (int rank = 0; rank < world; ++rank) {
          const cuda::GpuWeights g = cuda::gpu_weights_upload(c, *w, shape, rank);
          SCOPED_TRACE(::testing::Message()
                       << "intermediate " << intermediate << ", " << dtype_name(dtype) << ", world "
                       << world << ", rank " << rank);
          for (int64_t layer = 0; layer < c.num_hidden_layers; ++layer) {
            const RankLayerSlices s = rank_layer_slices(c, shape, rank, layer);
            const cuda::GpuLayerWeights& l = g.layers[static_cast<size_t>(layer)];
            EXPECT_EQ(download(l.qkv_proj), expected(*w, s.qkv)) << "layer " << layer;
            EXPECT_EQ(download(l.o_proj), expected(*w, {s.o_proj})) << "layer " << layer;
            // Gate and up rows in turns of 64 where the rank's MLP columns allow it
            // (gate_up_layout.h), else every gate row then every up row.
            const int64_t inter = s.gate_up.front().rows;
            EXPECT_EQ(g.gate_up_turn, inter % cuda::kSwigluTurn == 0 ? cuda::kSwigluTurn : 0);
            const std::vector<TensorSlice> turns =
                cuda::gate_up_in_turns(s.gate_up, g.gate_up_turn);
            EXPECT_EQ(download(l.gate_up_proj), expected(*w, turns.empty() ? s.gate_up : turns))
                << "layer " << layer;
            EXPECT_EQ(download(l.down_proj), expected(*w, {s.down})) << "layer " << layer;
          }
          EXPECT_EQ(download(g.lm_head), expected(*w, {rank_lm_head_slice(c, shape, rank)}));
          // The embedding's rows of this rank's vocabulary (whole at one rank).
          EXPECT_EQ(download(g.embed_tokens),
                    expected(*w, {rank_embedding_slice(c, shape, rank)}));
        }
      }
    }
  }
}

TEST(CudaRankWeights, ATiedLmHeadIsTheRanksEmbeddingSlice) {
  PACELINE_REQUIRE_GPU();
  ModelConfig c = splittable_config();
  c.tie_word_embeddings = true;
  const auto w = make_dummy_weights(c, 5, DType::kBF16);
  for (int world : {1, 2, 4}) {
    const TensorParallelShape shape = tensor_parallel_shape(c, world);
    for (int rank = 0; rank < world; ++rank) {
      SCOPED_TRACE(::testing::Message() << "world " << world << ", rank " << rank);
      const cuda::GpuWeights g = cuda::gpu_weights_upload(c, *w, shape, rank);
      // One copy of the rank's vocabulary rows serves as the embedding and the lm_head.
      EXPECT_EQ(g.lm_head.bytes(), 0u);
      EXPECT_EQ(g.lm_head_data(), g.embed_tokens.as<__nv_bfloat16>());
      EXPECT_EQ(download(g.embed_tokens), expected(*w, {rank_lm_head_slice(c, shape, rank)}));
    }
  }
}

}  // namespace
}  // namespace paceline
#endif  // PACELINE_HAVE_CUDA
