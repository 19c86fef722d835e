#pragma once
// The model's weights on the GPU: matrices in bf16, in the layout the forward multiplies with
// (q/k/v stacked into one [q_size + 2 kv_size, hidden] matrix, gate/up into one), and the norm
// weights in float32 (they are tiny and the norms compute in float32).
#include <cstdint>
#include <vector>

#include "exec/cuda/device_buffer.h"
#include "exec/cuda/kernels.h"
#include "model/config.h"
#include "model/tensor_parallel_shape.h"
#include "model/weights.h"

namespace paceline::cuda {

struct GpuLayerWeights {
  DeviceBuffer input_norm;           // f32 [hidden]
  DeviceBuffer qkv_proj;             // bf16 [q_size + 2 kv_size, hidden]
  DeviceBuffer q_norm;               // f32 [head_dim]; empty without qk_norm
  DeviceBuffer k_norm;               // f32 [head_dim]
  DeviceBuffer o_proj;               // bf16 [hidden, q_size]
  DeviceBuffer post_attention_norm;  // f32 [hidden]
  DeviceBuffer gate_up_proj;         // bf16 [2 intermediate, hidden]
  DeviceBuffer down_proj;            // bf16 [hidden, intermediate]
};

struct GpuWeights {
  DeviceBuffer embed_tokens;  // bf16 [vocab / ranks, hidden]: the rank's vocabulary rows
  std::vector<GpuLayerWeights> layers;
  DeviceBuffer final_norm;  // f32 [hidden]
  DeviceBuffer lm_head;     // bf16 [vocab / ranks, hidden]; empty when tied to embed_tokens
  int64_t bytes = 0;        // device bytes in all
  // gate_up_proj's rows: 0 in the checkpoint's order (every gate row, then every up row), else
  // gate and up in turns of this many rows (gate_up_layout.h).
  int64_t gate_up_turn = 0;

  const bf16* lm_head_data() const {
    return lm_head.bytes() > 0 ? lm_head.as<bf16>() : embed_tokens.as<bf16>();
  }
};

// Rank `rank`'s weights of a model split over shape.world tensor-parallel ranks: its slices of
// the projections, the embedding and the lm_head (model/tensor_parallel_slices.h, the CPU split's
// slices; a tied lm_head is the embedding's slice, held once), the norms whole. One rank (the one-GPU executor) takes every tensor whole,
// through the same code. Checks every tensor's shape against the config (errors name the
// tensor) and uploads it, converting to bf16 where the source is float32 or float16.
GpuWeights gpu_weights_upload(const ModelConfig& config, const Weights& weights,
                              const TensorParallelShape& shape, int rank);

}  // namespace paceline::cuda
