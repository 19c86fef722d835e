#pragma once
// The shape of one rank's slice of a model split over N tensor-parallel ranks (Megatron-style:
// query heads, KV heads, MLP columns and lm_head rows in N equal parts; docs/tensor-parallel.md).
// The CPU executor splits its weights by it (exec/cpu/tensor_parallel.h) and the simulator prices
// a TP-N replica by it (sim/roofline_profile.h), so both refuse the same sizes with the same words.
#include <cstdint>

#include "model/config.h"

namespace paceline {

struct TensorParallelShape {
  int world = 1;
  int64_t heads = 0;         // query heads per rank
  int64_t kv_heads = 0;      // KV heads per rank
  int64_t intermediate = 0;  // MLP columns per rank
  int64_t vocab = 0;         // lm_head rows per rank
};

// The slice sizes for `world` ranks; an error naming the field when one does not divide
// (`--tensor-parallel-size 3: num_attention_heads 4 does not split into 3 equal parts`).
TensorParallelShape tensor_parallel_shape(const ModelConfig& config, int world);

// The widths one rank computes with, as a config: its query heads, KV heads and MLP columns
// (so q_size(), kv_size(), intermediate_size and kv_bytes_per_token() are the rank's); the
// vocabulary, the hidden size and everything else whole (the embedding's rows are summed over
// the ranks and the lm_head's logits gathered into whole rows). At one rank, the config itself.
ModelConfig rank_model_config(const ModelConfig& config, const TensorParallelShape& shape);

}  // namespace paceline
