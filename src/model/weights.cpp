// DType, TensorView and the tensor list a config needs; loaders live in safetensors_weights.cpp
// and dummy_weights.cpp.
#include "model/weights.h"

#include <cstring>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/error.h"
#include "model/float16.h"

namespace paceline {

int64_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return 4;
    case DType::kF16:
    case DType::kBF16:
      return 2;
  }
  fail("dtype_size: unknown dtype {}", static_cast<int>(dtype));
}

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return "F32";
    case DType::kF16:
      return "F16";
    case DType::kBF16:
      return "BF16";
  }
  return "?";
}

int64_t TensorView::numel() const {
  int64_t n = 1;
  for (int64_t dim : shape) n *= dim;
  return n;
}

// Elements are read with memcpy: a safetensors file need not align its tensors.
float TensorView::at(int64_t i) const {
  const auto* bytes = static_cast<const unsigned char*>(data);
  if (dtype == DType::kF32) {
    float value;
    std::memcpy(&value, bytes + i * 4, 4);
    return value;
  }
  uint16_t bits;
  std::memcpy(&bits, bytes + i * 2, 2);
  return dtype == DType::kF16 ? f16_to_f32(bits) : bf16_to_f32(bits);
}

void TensorView::to_f32(float* out) const {
  const auto* bytes = static_cast<const unsigned char*>(data);
  int64_t n = numel();
  switch (dtype) {
    case DType::kF32:
      std::memcpy(out, bytes, static_cast<size_t>(n) * 4);
      return;
    case DType::kF16:
      for (int64_t i = 0; i < n; ++i) {
        uint16_t bits;
        std::memcpy(&bits, bytes + i * 2, 2);
        out[i] = f16_to_f32(bits);
      }
      return;
    case DType::kBF16:
      for (int64_t i = 0; i < n; ++i) {
        uint16_t bits;
        std::memcpy(&bits, bytes + i * 2, 2);
        out[i] = bf16_to_f32(bits);
      }
      return;
  }
}

std::vector<ExpectedTensor> expected_tensors(const ModelConfig& config) {
  const int64_t hidden = config.hidden_size;
  const int64_t inter = config.intermediate_size;
  std::vector<ExpectedTensor> out;
  out.push_back({"model.embed_tokens.weight", {config.vocab_size, hidden}});
  for (int64_t i = 0; i < config.num_hidden_layers; ++i) {
    const std::string layer = "model.layers." + std::to_string(i) + ".";
    out.push_back({layer + "input_layernorm.weight", {hidden}});
    out.push_back({layer + "self_attn.q_proj.weight", {config.q_size(), hidden}});
    out.push_back({layer + "self_attn.k_proj.weight", {config.kv_size(), hidden}});
    out.push_back({layer + "self_attn.v_proj.weight", {config.kv_size(), hidden}});
    out.push_back({layer + "self_attn.o_proj.weight", {hidden, config.q_size()}});
    if (config.qk_norm) {
      out.push_back({layer + "self_attn.q_norm.weight", {config.head_dim}});
      out.push_back({layer + "self_attn.k_norm.weight", {config.head_dim}});
    }
    out.push_back({layer + "post_attention_layernorm.weight", {hidden}});
    out.push_back({layer + "mlp.gate_proj.weight", {inter, hidden}});
    out.push_back({layer + "mlp.up_proj.weight", {inter, hidden}});
    out.push_back({layer + "mlp.down_proj.weight", {hidden, inter}});
  }
  out.push_back({"model.norm.weight", {hidden}});
  if (!config.tie_word_embeddings) out.push_back({"lm_head.weight", {config.vocab_size, hidden}});
  return out;
}

const TensorView& checked_tensor(const Weights& weights, const std::string& name,
                                 const std::vector<int64_t>& shape) {
  const TensorView& view = weights.get(name);
  if (view.shape != shape) {
    fail("tensor {}: shape [{}], the config needs [{}]", name, fmt::join(view.shape, ", "),
         fmt::join(shape, ", "));
  }
  return view;
}

}  // namespace paceline
