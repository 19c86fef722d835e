#pragma once
// Tensor parallelism's arithmetic (Megatron-style), done on the CPU: the model split over N
// ranks that each hold a slice of every projection and compute on it, with a sum over ranks
// (the all-reduce) where the slices meet. Attention heads and KV heads go to ranks in contiguous
// groups (rank r: query heads [r H/N, (r+1) H/N) and the KV heads they read); q/k/v and
// gate/up are split by output rows (column parallel), o_proj and down_proj by input columns
// (row parallel: each rank's product is a partial sum of the whole output); the lm_head by
// vocabulary rows, whose logits are gathered; the input embedding by the same vocabulary rows
// (each rank embeds the tokens of its rows, zeros for the others, and the ranks' rows are summed,
// as vLLM's vocabulary-parallel embedding). The norms are replicated.
//
// One process computes every rank in turn (there is one CPU): this proves the split and the
// reductions against the unsplit forward and Hugging Face's logits, so that an executor with
// one thread per GPU can run the same plan with NCCL in place of the loop (docs/tensor-parallel.md,
// "The CUDA ranks"; NCCL itself: exec/nccl_library.h).
#include <cstdint>
#include <vector>

#include "exec/cpu/cpu_weights.h"
#include "model/config.h"
#include "model/tensor_parallel_shape.h"  // TensorParallelShape, tensor_parallel_shape()

namespace paceline {

// One rank's slices of the layers, of the embedding and of the lm_head.
struct CpuRankWeights {
  std::vector<CpuLayerWeights> layers;  // qkv [(q + 2 kv) / N, hidden], o [hidden, q / N],
                                        // gate_up [2 I / N, hidden], down [hidden, I / N]
  std::vector<float> embed_tokens;      // [vocab / N, hidden]: rows [r V / N, (r + 1) V / N)
  std::vector<float> lm_head;           // [vocab / N, hidden]
};

// Rank `rank`'s slices of `full`.
CpuRankWeights shard_weights(const ModelConfig& config, const CpuWeights& full,
                             const TensorParallelShape& shape, int rank);

// The all-reduce of a row-parallel projection followed by the residual add: y[i] += the sum of
// partials[r][i] over the ranks, in rank order (the same order on every rank, so every rank
// holds the same bits).
// Rank `rank`'s part of the embedding of `tokens` ([rows]): the row of each token among its
// vocabulary rows, zeros for any other token. Summed over the ranks, every row's embedding.
void embed_rank(const CpuRankWeights& weights, const TensorParallelShape& shape, int rank,
                const std::vector<int32_t>& tokens, int64_t hidden, float* out);

void all_reduce_add(const std::vector<std::vector<float>>& partials, int64_t n, float* y);

}  // namespace paceline
