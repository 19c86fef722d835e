#include "exec/cuda/gpu_weights.h"

#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/error.h"
#include "exec/cuda/cuda_check.h"

namespace paceline::cuda {
namespace {

const TensorView& checked(const Weights& weights, const std::string& name,
                          const std::vector<int64_t>& shape) {
  const TensorView& view = weights.get(name);
  if (view.shape != shape) {
    fail("tensor {}: shape [{}], the config needs [{}]", name, fmt::join(view.shape, ", "),
         fmt::join(shape, ", "));
  }
  return view;
}

// Copies `view` as bf16 to dst; bf16 sources go as they are, others through float32.
void upload_bf16(const TensorView& view, bf16* dst) {
  const auto n = static_cast<size_t>(view.numel());
  if (view.dtype == DType::kBF16) {
    PACELINE_CUDA_CHECK(cudaMemcpy(dst, view.data, n * sizeof(bf16), cudaMemcpyHostToDevice));
    return;
  }
  std::vector<float> f32(n);
  view.to_f32(f32.data());
  std::vector<bf16> converted(n);
  for (size_t i = 0; i < n; ++i) converted[i] = __float2bfloat16(f32[i]);
  PACELINE_CUDA_CHECK(
      cudaMemcpy(dst, converted.data(), n * sizeof(bf16), cudaMemcpyHostToDevice));
}

// Stacks the named [rows_i, cols] tensors into one bf16 matrix.
DeviceBuffer stacked_bf16(const Weights& weights, const std::vector<std::string>& names,
                          const std::vector<int64_t>& rows, int64_t cols, int64_t& bytes) {
  int64_t total_rows = 0;
  for (int64_t r : rows) total_rows += r;
  DeviceBuffer buf(static_cast<size_t>(total_rows * cols) * sizeof(bf16));
  int64_t offset = 0;
  for (size_t i = 0; i < names.size(); ++i) {
    upload_bf16(checked(weights, names[i], {rows[i], cols}), buf.as<bf16>() + offset * cols);
    offset += rows[i];
  }
  bytes += static_cast<int64_t>(buf.bytes());
  return buf;
}

DeviceBuffer vector_f32(const Weights& weights, const std::string& name, int64_t size,
                        int64_t& bytes) {
  const TensorView& view = checked(weights, name, {size});
  std::vector<float> f32(static_cast<size_t>(size));
  view.to_f32(f32.data());
  DeviceBuffer buf(f32.size() * sizeof(float));
  PACELINE_CUDA_CHECK(cudaMemcpy(buf.as<float>(), f32.data(), buf.bytes(), cudaMemcpyHostToDevice));
  bytes += static_cast<int64_t>(buf.bytes());
  return buf;
}

}  // namespace

GpuWeights gpu_weights_upload(const ModelConfig& c, const Weights& weights) {
  const int64_t hidden = c.hidden_size;
  const int64_t inter = c.intermediate_size;
  GpuWeights w;
  w.embed_tokens =
      stacked_bf16(weights, {"model.embed_tokens.weight"}, {c.vocab_size}, hidden, w.bytes);
  w.final_norm = vector_f32(weights, "model.norm.weight", hidden, w.bytes);
  if (!c.tie_word_embeddings) {
    w.lm_head = stacked_bf16(weights, {"lm_head.weight"}, {c.vocab_size}, hidden, w.bytes);
  }
  w.layers.resize(static_cast<size_t>(c.num_hidden_layers));
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const std::string p = fmt::format("model.layers.{}.", i);
    GpuLayerWeights& l = w.layers[static_cast<size_t>(i)];
    l.input_norm = vector_f32(weights, p + "input_layernorm.weight", hidden, w.bytes);
    l.qkv_proj = stacked_bf16(
        weights,
        {p + "self_attn.q_proj.weight", p + "self_attn.k_proj.weight", p + "self_attn.v_proj.weight"},
        {c.q_size(), c.kv_size(), c.kv_size()}, hidden, w.bytes);
    if (c.qk_norm) {
      l.q_norm = vector_f32(weights, p + "self_attn.q_norm.weight", c.head_dim, w.bytes);
      l.k_norm = vector_f32(weights, p + "self_attn.k_norm.weight", c.head_dim, w.bytes);
    }
    l.o_proj = stacked_bf16(weights, {p + "self_attn.o_proj.weight"}, {hidden}, c.q_size(), w.bytes);
    l.post_attention_norm = vector_f32(weights, p + "post_attention_layernorm.weight", hidden, w.bytes);
    l.gate_up_proj = stacked_bf16(weights, {p + "mlp.gate_proj.weight", p + "mlp.up_proj.weight"},
                                  {inter, inter}, hidden, w.bytes);
    l.down_proj = stacked_bf16(weights, {p + "mlp.down_proj.weight"}, {hidden}, inter, w.bytes);
  }
  return w;
}

}  // namespace paceline::cuda
