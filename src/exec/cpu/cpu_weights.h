#pragma once
// The model's weights converted once to float32, in the layout the CPU forward multiplies with:
// q/k/v projections stacked into one matrix and gate/up into another, so each is one GEMM.
#include <cstdint>
#include <vector>

#include "model/config.h"
#include "model/weights.h"

namespace paceline {

struct CpuLayerWeights {
  std::vector<float> input_norm;           // [hidden]
  std::vector<float> qkv_proj;             // [q_size + 2 kv_size, hidden]: q, k, v stacked
  std::vector<float> q_norm;               // [head_dim]; empty without qk_norm
  std::vector<float> k_norm;               // [head_dim]; empty without qk_norm
  std::vector<float> o_proj;               // [hidden, q_size]
  std::vector<float> post_attention_norm;  // [hidden]
  std::vector<float> gate_up_proj;         // [2 intermediate, hidden]: gate, up stacked
  std::vector<float> down_proj;            // [hidden, intermediate]
};

struct CpuWeights {
  std::vector<float> embed_tokens;  // [vocab, hidden]
  std::vector<CpuLayerWeights> layers;
  std::vector<float> final_norm;  // [hidden]
  std::vector<float> lm_head;     // [vocab, hidden]; empty when tied to embed_tokens

  const float* lm_head_data() const {
    return lm_head.empty() ? embed_tokens.data() : lm_head.data();
  }
};

// Checks every tensor's shape against the config; errors name the tensor.
CpuWeights cpu_weights_convert(const ModelConfig& config, const Weights& weights);

}  // namespace paceline
