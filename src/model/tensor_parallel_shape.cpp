#include "model/tensor_parallel_shape.h"

#include "base/error.h"

namespace paceline {
namespace {

int64_t per_rank(int64_t total, int world, const char* field) {
  if (total % world != 0) {
    fail("--tensor-parallel-size {}: {} {} does not split into {} equal parts", world, field,
         total, world);
  }
  return total / world;
}

}  // namespace

TensorParallelShape tensor_parallel_shape(const ModelConfig& config, int world) {
  if (world < 1) fail("--tensor-parallel-size {}: must be at least 1", world);
  TensorParallelShape s;
  s.world = world;
  s.heads = per_rank(config.num_attention_heads, world, "num_attention_heads");
  s.kv_heads = per_rank(config.num_key_value_heads, world, "num_key_value_heads");
  s.intermediate = per_rank(config.intermediate_size, world, "intermediate_size");
  s.vocab = per_rank(config.vocab_size, world, "vocab_size");
  return s;
}

ModelConfig rank_model_config(const ModelConfig& config, const TensorParallelShape& shape) {
  ModelConfig rank = config;
  rank.num_attention_heads = shape.heads;
  rank.num_key_value_heads = shape.kv_heads;
  rank.intermediate_size = shape.intermediate;
  return rank;
}

}  // namespace paceline
