#include "exec/cpu/cpu_weights.h"

#include <string>

#include <fmt/format.h>

namespace paceline {
namespace {

// Appends tensor `name`, which must have shape `shape`, to `out` as float32.
void append_f32(const Weights& weights, const std::string& name, const std::vector<int64_t>& shape,
                std::vector<float>& out) {
  const TensorView& view = checked_tensor(weights, name, shape);
  size_t offset = out.size();
  out.resize(offset + static_cast<size_t>(view.numel()));
  view.to_f32(out.data() + offset);
}

std::vector<float> load_f32(const Weights& weights, const std::string& name,
                            const std::vector<int64_t>& shape) {
  std::vector<float> out;
  append_f32(weights, name, shape, out);
  return out;
}

}  // namespace

CpuWeights cpu_weights_convert(const ModelConfig& c, const Weights& weights) {
  const int64_t hidden = c.hidden_size;
  CpuWeights w;
  w.embed_tokens = load_f32(weights, "model.embed_tokens.weight", {c.vocab_size, hidden});
  w.final_norm = load_f32(weights, "model.norm.weight", {hidden});
  if (!c.tie_word_embeddings) {
    w.lm_head = load_f32(weights, "lm_head.weight", {c.vocab_size, hidden});
  }
  w.layers.resize(static_cast<size_t>(c.num_hidden_layers));
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const std::string p = fmt::format("model.layers.{}.", i);
    CpuLayerWeights& l = w.layers[i];
    l.input_norm = load_f32(weights, p + "input_layernorm.weight", {hidden});
    append_f32(weights, p + "self_attn.q_proj.weight", {c.q_size(), hidden}, l.qkv_proj);
    append_f32(weights, p + "self_attn.k_proj.weight", {c.kv_size(), hidden}, l.qkv_proj);
    append_f32(weights, p + "self_attn.v_proj.weight", {c.kv_size(), hidden}, l.qkv_proj);
    if (c.qk_norm) {
      l.q_norm = load_f32(weights, p + "self_attn.q_norm.weight", {c.head_dim});
      l.k_norm = load_f32(weights, p + "self_attn.k_norm.weight", {c.head_dim});
    }
    l.o_proj = load_f32(weights, p + "self_attn.o_proj.weight", {hidden, c.q_size()});
    l.post_attention_norm = load_f32(weights, p + "post_attention_layernorm.weight", {hidden});
    append_f32(weights, p + "mlp.gate_proj.weight", {c.intermediate_size, hidden}, l.gate_up_proj);
    append_f32(weights, p + "mlp.up_proj.weight", {c.intermediate_size, hidden}, l.gate_up_proj);
    l.down_proj = load_f32(weights, p + "mlp.down_proj.weight", {hidden, c.intermediate_size});
  }
  return w;
}

}  // namespace paceline
