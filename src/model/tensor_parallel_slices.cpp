#include "model/tensor_parallel_slices.h"

#include <cstring>

#include <fmt/format.h>

#include "base/error.h"

namespace paceline {
namespace {

// Rows [row0, row0 + rows) of `name` ([total_rows, cols]), every column.
TensorSlice row_slice(std::string name, int64_t total_rows, int64_t cols, int64_t row0,
                      int64_t rows) {
  return {std::move(name), total_rows, cols, row0, rows, 0, cols};
}

// Columns [col0, col0 + cols) of `name` ([rows, total_cols]), every row.
TensorSlice column_slice(std::string name, int64_t rows, int64_t total_cols, int64_t col0,
                         int64_t cols) {
  return {std::move(name), rows, total_cols, 0, rows, col0, cols};
}

}  // namespace

TensorSlice whole_tensor(std::string name, int64_t rows, int64_t cols) {
  return row_slice(std::move(name), rows, cols, 0, rows);
}

const TensorView& slice_source(const Weights& weights, const TensorSlice& s) {
  return checked_tensor(weights, s.name, {s.total_rows, s.total_cols});
}

RankLayerSlices rank_layer_slices(const ModelConfig& c, const TensorParallelShape& shape, int rank,
                                  int64_t layer) {
  const std::string p = fmt::format("model.layers.{}.", layer);
  const int64_t hidden = c.hidden_size;
  const int64_t q_rank = shape.heads * c.head_dim;
  const int64_t kv_rank = shape.kv_heads * c.head_dim;
  const int64_t inter = c.intermediate_size;
  const int64_t inter_rank = shape.intermediate;
  RankLayerSlices s;
  s.qkv = {row_slice(p + "self_attn.q_proj.weight", c.q_size(), hidden, rank * q_rank, q_rank),
           row_slice(p + "self_attn.k_proj.weight", c.kv_size(), hidden, rank * kv_rank, kv_rank),
           row_slice(p + "self_attn.v_proj.weight", c.kv_size(), hidden, rank * kv_rank, kv_rank)};
  s.o_proj = column_slice(p + "self_attn.o_proj.weight", hidden, c.q_size(), rank * q_rank, q_rank);
  s.gate_up = {row_slice(p + "mlp.gate_proj.weight", inter, hidden, rank * inter_rank, inter_rank),
               row_slice(p + "mlp.up_proj.weight", inter, hidden, rank * inter_rank, inter_rank)};
  s.down = column_slice(p + "mlp.down_proj.weight", hidden, inter, rank * inter_rank, inter_rank);
  return s;
}

TensorSlice rank_lm_head_slice(const ModelConfig& c, const TensorParallelShape& shape, int rank) {
  return row_slice(c.tie_word_embeddings ? "model.embed_tokens.weight" : "lm_head.weight",
                   c.vocab_size, c.hidden_size, rank * shape.vocab, shape.vocab);
}

TensorSlice rank_embedding_slice(const ModelConfig& c, const TensorParallelShape& shape,
                                 int rank) {
  return row_slice("model.embed_tokens.weight", c.vocab_size, c.hidden_size, rank * shape.vocab,
                   shape.vocab);
}

void slice_to_f32(const TensorView& view, const TensorSlice& s, float* out) {
  if (s.whole()) {
    view.to_f32(out);
    return;
  }
  for (int64_t r = 0; r < s.rows; ++r) {
    const int64_t first = (s.row0 + r) * s.total_cols + s.col0;
    for (int64_t j = 0; j < s.cols; ++j) out[r * s.cols + j] = view.at(first + j);
  }
}

void slice_copy_bytes(const TensorView& view, const TensorSlice& s, void* out) {
  const auto element = static_cast<size_t>(dtype_size(view.dtype));
  const auto* src = static_cast<const unsigned char*>(view.data);
  auto* dst = static_cast<unsigned char*>(out);
  const size_t row_bytes = static_cast<size_t>(s.cols) * element;
  for (int64_t r = 0; r < s.rows; ++r) {
    const int64_t first = (s.row0 + r) * s.total_cols + s.col0;
    std::memcpy(dst + static_cast<size_t>(r) * row_bytes,
                src + static_cast<size_t>(first) * element, row_bytes);
  }
}

}  // namespace paceline
