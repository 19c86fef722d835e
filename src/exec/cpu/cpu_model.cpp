#include "exec/cpu/cpu_model.h"

#include <cblas.h>
#include <algorithm>
#include <cstring>

#include "base/error.h"
#include "exec/cpu/attention.h"
#include "exec/cpu/linear.h"
#include "exec/cpu/rms_norm.h"
#include "exec/cpu/swiglu.h"

namespace paceline {

struct CpuModel::Batch {
  int64_t rows = 0;
  std::vector<int32_t> tokens;     // [rows]
  std::vector<int64_t> positions;  // [rows]
  std::vector<int64_t> slots;      // [rows]: the slot mapping, where each row's K and V go
  std::vector<AttentionSeq> seqs;
  std::vector<int64_t> logit_rows;  // rows whose logits the plan asks for, in output order
};

CpuModel::CpuModel(const ModelConfig& config, const Weights& weights, KvCacheShape kv_shape,
                   int num_threads, int tensor_parallel_size)
    : config_(config),
      weights_(cpu_weights_convert(config, weights)),
      cache_(config.num_hidden_layers, kv_shape, config.num_key_value_heads, config.head_dim),
      rope_(config.head_dim, config.rope_theta, config.rope_scaling),
      pool_(std::max(1, num_threads)) {
  if (config.num_key_value_heads <= 0 ||
      config.num_attention_heads % config.num_key_value_heads != 0) {
    fail("model {}: {} attention heads do not split into {} KV heads", config.name,
         config.num_attention_heads, config.num_key_value_heads);
  }
  tp_ = tensor_parallel_shape(config, tensor_parallel_size);
  if (tp_.world > 1) {
    for (int r = 0; r < tp_.world; ++r) ranks_.push_back(shard_weights(config, weights_, tp_, r));
    weights_.layers.clear();  // every rank holds its slices; only the norms stay whole
    weights_.embed_tokens.clear();
    weights_.embed_tokens.shrink_to_fit();
    weights_.lm_head.clear();
    weights_.lm_head.shrink_to_fit();
    partials_.resize(static_cast<size_t>(tp_.world));
  }
  openblas_set_num_threads(std::max(1, num_threads));
}

const CpuLayerWeights& CpuModel::layer_of(int rank, int64_t layer) const {
  return ranks_.empty() ? weights_.layers[static_cast<size_t>(layer)]
                        : ranks_[static_cast<size_t>(rank)].layers[static_cast<size_t>(layer)];
}

CpuModel::Batch CpuModel::flatten(const StepPlan& plan) const {
  Batch b;
  b.rows = plan.num_tokens();
  b.tokens.reserve(static_cast<size_t>(b.rows));
  b.positions.reserve(static_cast<size_t>(b.rows));
  b.slots.reserve(static_cast<size_t>(b.rows));
  for (const ScheduledSeq& s : plan.seqs) {
    auto n = static_cast<int64_t>(s.tokens.size());
    if (s.start_pos < 0) fail("request {}: start_pos {} is negative", s.request_id, s.start_pos);
    if (s.num_logits < 0 || s.num_logits > n) {
      fail("request {}: num_logits {} for {} tokens", s.request_id, s.num_logits, n);
    }
    cache_.check_block_table(s.block_table, s.start_pos + n, s.request_id);
    int64_t first_row = static_cast<int64_t>(b.tokens.size());
    b.seqs.push_back({first_row, n, s.start_pos, s.block_table});
    for (int64_t i = 0; i < n; ++i) {
      int32_t token = s.tokens[i];
      if (token < 0 || token >= config_.vocab_size) {
        fail("request {}: token {} is outside the vocabulary of {}", s.request_id, token,
             config_.vocab_size);
      }
      b.tokens.push_back(token);
      b.positions.push_back(s.start_pos + i);
      b.slots.push_back(cache_.slot(s.block_table, s.start_pos + i));
    }
    for (int64_t i = n - s.num_logits; i < n; ++i) b.logit_rows.push_back(first_row + i);
  }
  return b;
}

std::vector<float> CpuModel::forward(const StepPlan& plan) {
  Batch batch = flatten(plan);
  const int64_t rows = batch.rows;
  const int64_t hidden = config_.hidden_size;
  const int64_t head_dim = config_.head_dim;
  if (rows == 0) return {};

  residual_.resize(static_cast<size_t>(rows * hidden));
  if (ranks_.empty()) {
    for (int64_t r = 0; r < rows; ++r) {
      std::memcpy(residual_.data() + r * hidden,
                  weights_.embed_tokens.data() + int64_t{batch.tokens[r]} * hidden,
                  sizeof(float) * hidden);
    }
  } else {  // vocabulary parallel: each rank's rows, then the sum over the ranks
    for (int rank = 0; rank < tp_.world; ++rank) {
      std::vector<float>& partial = partials_[static_cast<size_t>(rank)];
      partial.resize(static_cast<size_t>(rows * hidden));
      embed_rank(ranks_[static_cast<size_t>(rank)], tp_, rank, batch.tokens, hidden,
                 partial.data());
    }
    std::fill(residual_.begin(), residual_.end(), 0.0f);
    all_reduce_add(partials_, rows * hidden, residual_.data());
  }
  cos_sin_.resize(static_cast<size_t>(rows * head_dim));
  for (int64_t r = 0; r < rows; ++r) {
    rope_.cos_sin(batch.positions[r], cos_sin_.data() + r * head_dim);
  }
  for (int64_t layer = 0; layer < config_.num_hidden_layers; ++layer) {
    attention_block(layer, batch);
    mlp_block(layer, rows);
  }
  return logits(batch);
}

void CpuModel::attention_block(int64_t layer, const Batch& batch) {
  const int64_t rows = batch.rows;
  const int64_t hidden = config_.hidden_size;
  const auto eps = static_cast<float>(config_.rms_norm_eps);
  normed_.resize(static_cast<size_t>(rows * hidden));
  for (int64_t r = 0; r < rows; ++r) {
    rms_norm(residual_.data() + r * hidden, layer_of(0, layer).input_norm.data(), hidden, eps,
             normed_.data() + r * hidden);
  }
  if (ranks_.empty()) {
    attention_rank(0, layer, batch, residual_.data(), 1.0f);  // residual += attn @ o_proj^T
    return;
  }
  for (int rank = 0; rank < tp_.world; ++rank) {
    std::vector<float>& partial = partials_[static_cast<size_t>(rank)];
    partial.resize(static_cast<size_t>(rows * hidden));
    attention_rank(rank, layer, batch, partial.data(), 0.0f);
  }
  all_reduce_add(partials_, rows * hidden, residual_.data());
}

// One rank's heads: q/k/v of its heads, their attention, and its partial o_proj product into
// out (beta 1: added to out).
void CpuModel::attention_rank(int rank, int64_t layer, const Batch& batch, float* out,
                              float beta) {
  const CpuLayerWeights& w = layer_of(rank, layer);
  const int64_t rows = batch.rows;
  const int64_t hidden = config_.hidden_size;
  const int64_t head_dim = config_.head_dim;
  const int64_t heads = tp_.heads, kv_heads = tp_.kv_heads;
  const int64_t q_size = heads * head_dim;
  const int64_t kv_size = kv_heads * head_dim;
  const int64_t first_kv_head = rank * kv_heads;
  const int64_t qkv_width = q_size + 2 * kv_size;
  const auto eps = static_cast<float>(config_.rms_norm_eps);

  qkv_.resize(static_cast<size_t>(rows * qkv_width));
  attn_out_.resize(static_cast<size_t>(rows * q_size));
  linear(normed_.data(), rows, hidden, w.qkv_proj.data(), qkv_width, qkv_.data());

  // Per row: QK-norm (Qwen3) and RoPE on q and k, then k and v into the row's cache slot (this
  // rank's KV heads of it).
  pool_.parallel_for(rows, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      float* q = qkv_.data() + r * qkv_width;
      float* k = q + q_size;
      const float* v = k + kv_size;
      if (config_.qk_norm) {
        for (int64_t h = 0; h < heads; ++h) {
          rms_norm(q + h * head_dim, w.q_norm.data(), head_dim, eps, q + h * head_dim);
        }
        for (int64_t h = 0; h < kv_heads; ++h) {
          rms_norm(k + h * head_dim, w.k_norm.data(), head_dim, eps, k + h * head_dim);
        }
      }
      const float* cs = cos_sin_.data() + r * head_dim;
      rope_.rotate(q, heads, cs);
      rope_.rotate(k, kv_heads, cs);
      const int64_t offset = first_kv_head * head_dim;
      std::memcpy(cache_.key(layer, batch.slots[r]) + offset, k, sizeof(float) * kv_size);
      std::memcpy(cache_.value(layer, batch.slots[r]) + offset, v, sizeof(float) * kv_size);
    }
  });

  AttentionShape shape{heads, kv_heads, head_dim, first_kv_head};
  paged_attention(qkv_.data(), qkv_width, cache_, layer, batch.seqs, shape, attn_out_.data(),
                  pool_);
  linear(attn_out_.data(), rows, q_size, w.o_proj.data(), hidden, out, beta);
}

void CpuModel::mlp_block(int64_t layer, int64_t rows) {
  const int64_t hidden = config_.hidden_size;
  const int64_t inter = tp_.intermediate;
  const auto eps = static_cast<float>(config_.rms_norm_eps);

  gate_up_.resize(static_cast<size_t>(rows * 2 * inter));
  act_.resize(static_cast<size_t>(rows * inter));
  for (int64_t r = 0; r < rows; ++r) {
    rms_norm(residual_.data() + r * hidden, layer_of(0, layer).post_attention_norm.data(), hidden,
             eps, normed_.data() + r * hidden);
  }
  for (int rank = 0; rank < tp_.world; ++rank) {
    const CpuLayerWeights& w = layer_of(rank, layer);
    linear(normed_.data(), rows, hidden, w.gate_up_proj.data(), 2 * inter, gate_up_.data());
    swiglu(gate_up_.data(), rows, inter, act_.data());
    if (ranks_.empty()) {
      // residual += act @ down_proj^T
      linear(act_.data(), rows, inter, w.down_proj.data(), hidden, residual_.data(), 1.0f);
    } else {
      std::vector<float>& partial = partials_[static_cast<size_t>(rank)];
      partial.resize(static_cast<size_t>(rows * hidden));
      linear(act_.data(), rows, inter, w.down_proj.data(), hidden, partial.data());
    }
  }
  if (!ranks_.empty()) all_reduce_add(partials_, rows * hidden, residual_.data());
}

std::vector<float> CpuModel::logits(const Batch& batch) {
  const int64_t hidden = config_.hidden_size;
  const auto num_rows = static_cast<int64_t>(batch.logit_rows.size());
  const auto eps = static_cast<float>(config_.rms_norm_eps);
  // The final norm is per row, so only the rows whose logits are wanted need it.
  std::vector<float> last_hidden(static_cast<size_t>(num_rows * hidden));
  for (int64_t i = 0; i < num_rows; ++i) {
    rms_norm(residual_.data() + batch.logit_rows[i] * hidden, weights_.final_norm.data(), hidden,
             eps, last_hidden.data() + i * hidden);
  }
  const int64_t vocab = config_.vocab_size;
  std::vector<float> out(static_cast<size_t>(num_rows * vocab));
  if (ranks_.empty()) {
    linear(last_hidden.data(), num_rows, hidden, weights_.lm_head_data(), vocab, out.data());
    return out;
  }
  // Each rank's vocabulary rows, gathered into whole rows of logits.
  std::vector<float> part(static_cast<size_t>(num_rows * tp_.vocab));
  for (int rank = 0; rank < tp_.world; ++rank) {
    linear(last_hidden.data(), num_rows, hidden, ranks_[static_cast<size_t>(rank)].lm_head.data(),
           tp_.vocab, part.data());
    for (int64_t i = 0; i < num_rows; ++i) {
      std::memcpy(out.data() + i * vocab + rank * tp_.vocab, part.data() + i * tp_.vocab,
                  sizeof(float) * tp_.vocab);
    }
  }
  return out;
}

}  // namespace paceline
