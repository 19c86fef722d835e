#include "exec/cuda/activations.h"

#include <algorithm>

#include "exec/cuda/gemm.h"

namespace paceline::cuda {

int64_t Activations::bytes_per_row(const ModelConfig& c) {
  const int64_t qkv = c.q_size() + 2 * c.kv_size();
  return 4 * c.hidden_size + 2 * c.hidden_size + 4 * qkv + 2 * c.q_size() +
         4 * 2 * c.intermediate_size + 2 * c.intermediate_size;
}

int64_t Activations::bytes_per_decode_row(const ModelConfig& c, int num_splits) {
  return int64_t{4} * c.num_attention_heads * num_splits * (c.head_dim + 2);
}

int64_t Activations::bytes_per_logit_row(const ModelConfig& c, int world) {
  return 2 * c.hidden_size + 4 * c.vocab_size * (world > 1 ? 2 : 1) + 4;
}

namespace {
// Grow by half again, so that a run of slowly growing steps does not reallocate each time.
// Rows come in multiples of the GEMM chunk (gemm.h): the last chunk's padding rows are computed.
size_t grown(int64_t want, int64_t have) {
  return static_cast<size_t>(gemm_padded_rows(std::max(want, have + have / 2)));
}
}  // namespace

bool Activations::reserve(const ModelConfig& c, int64_t want_rows, int64_t want_decode,
                          int64_t want_logits, int num_splits, int world) {
  bool moved = false;
  if (want_rows > rows) {
    const size_t n = grown(want_rows, rows);
    // The GEMMs' operands hold gemm_buffer_rows: the cuBLASLt part of a call starts after the
    // small-M rows and is padded from there.
    const auto b = static_cast<size_t>(gemm_buffer_rows(static_cast<int64_t>(n)));
    const int64_t qkv_width = c.q_size() + 2 * c.kv_size();
    residual.reserve(b * c.hidden_size * 4);
    normed.reserve(b * c.hidden_size * 2);
    qkv.reserve(b * qkv_width * 4);
    attn.reserve(b * c.q_size() * 2);
    gate_up.reserve(b * 2 * c.intermediate_size * 4);
    act.reserve(b * c.intermediate_size * 2);
    rows = static_cast<int64_t>(n);
    moved = true;
  }
  if (want_decode > decode_rows) {
    const size_t n = grown(want_decode, decode_rows);
    const auto heads_splits = static_cast<size_t>(c.num_attention_heads) * num_splits;
    partial_acc.reserve(n * heads_splits * c.head_dim * 4);
    partial_ml.reserve(n * heads_splits * 2 * 4);
    decode_rows = static_cast<int64_t>(n);
    moved = true;
  }
  if (want_logits > logit_rows) {
    const size_t n = grown(want_logits, logit_rows);
    final_normed.reserve(n * c.hidden_size * 2);
    logits.reserve(n * c.vocab_size * 4);
    // Each rank's slot holds the step's logit rows padded to the GEMM's chunk (at most n, a
    // multiple of it) times vocab / world: world slots fit in n x vocab.
    if (world > 1) vocab_slices.reserve(n * c.vocab_size * 4);
    sampled.reserve(n * 4);
    logit_rows = static_cast<int64_t>(n);
    moved = true;
  }
  return moved;
}

}  // namespace paceline::cuda
