#include "exec/cpu/tensor_parallel.h"

#include <cstring>

#include "base/error.h"

namespace paceline {
namespace {

// Rows [first, first + count) of a row-major [*, width] matrix, appended to out.
void append_rows(const std::vector<float>& m, int64_t width, int64_t first, int64_t count,
                 std::vector<float>& out) {
  out.insert(out.end(), m.begin() + first * width, m.begin() + (first + count) * width);
}

// Columns [first, first + count) of a row-major [rows, width] matrix.
std::vector<float> columns(const std::vector<float>& m, int64_t rows, int64_t width, int64_t first,
                           int64_t count) {
  std::vector<float> out(static_cast<size_t>(rows * count));
  for (int64_t r = 0; r < rows; ++r) {
    std::memcpy(out.data() + r * count, m.data() + r * width + first, sizeof(float) * count);
  }
  return out;
}

}  // namespace

CpuRankWeights shard_weights(const ModelConfig& config, const CpuWeights& full,
                             const TensorParallelShape& shape, int rank) {
  const int64_t hidden = config.hidden_size;
  const int64_t head_dim = config.head_dim;
  const int64_t q_size = config.q_size(), kv_size = config.kv_size();
  const int64_t q_rank = shape.heads * head_dim, kv_rank = shape.kv_heads * head_dim;
  const int64_t inter = config.intermediate_size, inter_rank = shape.intermediate;
  CpuRankWeights w;
  w.layers.reserve(full.layers.size());
  for (const CpuLayerWeights& l : full.layers) {
    CpuLayerWeights s;
    s.input_norm = l.input_norm;
    s.q_norm = l.q_norm;
    s.k_norm = l.k_norm;
    s.post_attention_norm = l.post_attention_norm;
    // Column parallel: this rank's query, key and value rows, stacked as in the full matrix.
    append_rows(l.qkv_proj, hidden, rank * q_rank, q_rank, s.qkv_proj);
    append_rows(l.qkv_proj, hidden, q_size + rank * kv_rank, kv_rank, s.qkv_proj);
    append_rows(l.qkv_proj, hidden, q_size + kv_size + rank * kv_rank, kv_rank, s.qkv_proj);
    append_rows(l.gate_up_proj, hidden, rank * inter_rank, inter_rank, s.gate_up_proj);
    append_rows(l.gate_up_proj, hidden, inter + rank * inter_rank, inter_rank, s.gate_up_proj);
    // Row parallel: the input columns of this rank's heads and MLP columns.
    s.o_proj = columns(l.o_proj, hidden, q_size, rank * q_rank, q_rank);
    s.down_proj = columns(l.down_proj, hidden, inter, rank * inter_rank, inter_rank);
    w.layers.push_back(std::move(s));
  }
  w.embed_tokens.assign(full.embed_tokens.begin() + rank * shape.vocab * hidden,
                        full.embed_tokens.begin() + (rank + 1) * shape.vocab * hidden);
  const float* lm_head = full.lm_head_data();
  w.lm_head.assign(lm_head + rank * shape.vocab * hidden,
                   lm_head + (rank + 1) * shape.vocab * hidden);
  return w;
}

void embed_rank(const CpuRankWeights& weights, const TensorParallelShape& shape, int rank,
                const std::vector<int32_t>& tokens, int64_t hidden, float* out) {
  const int64_t first = rank * shape.vocab;
  for (size_t r = 0; r < tokens.size(); ++r) {
    float* row = out + static_cast<int64_t>(r) * hidden;
    const int64_t local = int64_t{tokens[r]} - first;
    if (local < 0 || local >= shape.vocab) {
      std::memset(row, 0, sizeof(float) * static_cast<size_t>(hidden));
    } else {
      std::memcpy(row, weights.embed_tokens.data() + local * hidden,
                  sizeof(float) * static_cast<size_t>(hidden));
    }
  }
}

void all_reduce_add(const std::vector<std::vector<float>>& partials, int64_t n, float* y) {
  for (int64_t i = 0; i < n; ++i) {
    float sum = 0.0f;
    for (const std::vector<float>& p : partials) sum += p[static_cast<size_t>(i)];
    y[i] += sum;
  }
}

}  // namespace paceline
