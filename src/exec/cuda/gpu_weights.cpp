#include "exec/cuda/gpu_weights.h"

#include <string>

#include <fmt/format.h>

#include "exec/cuda/cuda_check.h"
#include "exec/cuda/gate_up_layout.h"
#include "exec/cuda/kernels.h"  // kSwigluTurn
#include "model/tensor_parallel_slices.h"

namespace paceline::cuda {
namespace {

// Copies `slice` of its source `view` (slice_source, shape checked) as bf16 to dst: a whole bf16
// tensor as it is, a slice of one by its rows' bytes, others through float32.
void upload_bf16(const TensorView& view, const TensorSlice& slice, bf16* dst) {
  const auto n = static_cast<size_t>(slice.numel());
  if (view.dtype == DType::kBF16 && slice.whole()) {
    PACELINE_CUDA_CHECK(cudaMemcpy(dst, view.data, n * sizeof(bf16), cudaMemcpyHostToDevice));
    return;
  }
  std::vector<bf16> host(n);
  if (view.dtype == DType::kBF16) {
    slice_copy_bytes(view, slice, host.data());
  } else {
    std::vector<float> f32(n);
    slice_to_f32(view, slice, f32.data());
    for (size_t i = 0; i < n; ++i) host[i] = __float2bfloat16(f32[i]);
  }
  PACELINE_CUDA_CHECK(cudaMemcpy(dst, host.data(), n * sizeof(bf16), cudaMemcpyHostToDevice));
}

// Stacks the slices (of one column count) into one bf16 matrix, in order.
DeviceBuffer stacked_bf16(const Weights& weights, const std::vector<TensorSlice>& slices,
                          int64_t& bytes) {
  int64_t total_rows = 0;
  for (const TensorSlice& t : slices) total_rows += t.rows;
  const int64_t cols = slices.front().cols;
  DeviceBuffer buf(static_cast<size_t>(total_rows * cols) * sizeof(bf16));
  int64_t offset = 0;
  for (const TensorSlice& t : slices) {
    upload_bf16(slice_source(weights, t), t, buf.as<bf16>() + offset * cols);
    offset += t.rows;
  }
  bytes += static_cast<int64_t>(buf.bytes());
  return buf;
}

DeviceBuffer vector_f32(const Weights& weights, const std::string& name, int64_t size,
                        int64_t& bytes) {
  const TensorView& view = checked_tensor(weights, name, {size});
  std::vector<float> f32(static_cast<size_t>(size));
  view.to_f32(f32.data());
  DeviceBuffer buf(f32.size() * sizeof(float));
  PACELINE_CUDA_CHECK(cudaMemcpy(buf.as<float>(), f32.data(), buf.bytes(), cudaMemcpyHostToDevice));
  bytes += static_cast<int64_t>(buf.bytes());
  return buf;
}

}  // namespace

GpuWeights gpu_weights_upload(const ModelConfig& c, const Weights& weights,
                              const TensorParallelShape& shape, int rank) {
  const int64_t hidden = c.hidden_size;
  GpuWeights w;
  // The rank's vocabulary rows of the embedding (every row at one rank); the norms replicated.
  w.embed_tokens = stacked_bf16(weights, {rank_embedding_slice(c, shape, rank)}, w.bytes);
  w.final_norm = vector_f32(weights, "model.norm.weight", hidden, w.bytes);
  // Tied: the embedding's slice is the lm_head's (the same rows), read by lm_head_data().
  if (!c.tie_word_embeddings) {
    w.lm_head = stacked_bf16(weights, {rank_lm_head_slice(c, shape, rank)}, w.bytes);
  }
  w.layers.resize(static_cast<size_t>(c.num_hidden_layers));
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const std::string p = fmt::format("model.layers.{}.", i);
    const RankLayerSlices s = rank_layer_slices(c, shape, rank, i);
    GpuLayerWeights& l = w.layers[static_cast<size_t>(i)];
    l.input_norm = vector_f32(weights, p + "input_layernorm.weight", hidden, w.bytes);
    l.qkv_proj = stacked_bf16(weights, s.qkv, w.bytes);
    if (c.qk_norm) {
      l.q_norm = vector_f32(weights, p + "self_attn.q_norm.weight", c.head_dim, w.bytes);
      l.k_norm = vector_f32(weights, p + "self_attn.k_norm.weight", c.head_dim, w.bytes);
    }
    l.o_proj = stacked_bf16(weights, {s.o_proj}, w.bytes);
    l.post_attention_norm = vector_f32(weights, p + "post_attention_layernorm.weight", hidden, w.bytes);
    const std::vector<TensorSlice> turns = gate_up_in_turns(s.gate_up, kSwigluTurn);
    l.gate_up_proj = stacked_bf16(weights, turns.empty() ? s.gate_up : turns, w.bytes);
    w.gate_up_turn = turns.empty() ? 0 : kSwigluTurn;
    l.down_proj = stacked_bf16(weights, {s.down}, w.bytes);
  }
  return w;
}

}  // namespace paceline::cuda
