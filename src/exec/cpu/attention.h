#pragma once
// Causal self-attention for a ragged batch, reading K and V through each sequence's block table.
// The query at position p of a sequence attends to that sequence's positions [0, p]; the caller
// has already written this step's keys and values into the cache.
#include <cstdint>
#include <span>

#include "exec/cpu/kv_cache.h"
#include "exec/cpu/thread_pool.h"

namespace paceline {

struct AttentionSeq {
  int64_t first_row = 0;  // row of its first token in the batch
  int64_t num_tokens = 0;
  int64_t start_pos = 0;  // position of its first token
  std::span<const int32_t> block_table;
};

struct AttentionShape {
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;  // grouped-query attention: head h reads kv head h / group size
  int64_t head_dim = 0;
  int64_t first_kv_head = 0;  // the cache's KV head that kv head 0 is (a tensor-parallel rank's)
};

// q: one row per token, num_heads * head_dim floats at stride q_stride. out: one row per token,
// num_heads * head_dim floats, contiguous. Softmax in float32 with the row max subtracted, scores
// scaled by 1 / sqrt(head_dim). Work is split over (token, head) pairs.
void paged_attention(const float* q, int64_t q_stride, const PagedKvCache& cache, int64_t layer,
                     std::span<const AttentionSeq> seqs, AttentionShape shape, float* out,
                     ThreadPool& pool);

}  // namespace paceline
