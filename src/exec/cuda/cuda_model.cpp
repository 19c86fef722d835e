#include "exec/cuda/cuda_model.h"

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "exec/cpu/rope.h"
#include "exec/cuda/cuda_check.h"

namespace paceline::cuda {
namespace {

// The shape, refused before any upload when its ranks cannot be joined: more than one rank needs
// this rank's collectives, over as many ranks, at this rank.
const TensorParallelShape& joinable(const ModelConfig& config, const TensorParallelShape& tp,
                                    int rank, const RankCollectives* collectives) {
  if (rank < 0 || rank >= tp.world) {
    fail("model {}: tensor-parallel rank {} of {} does not exist", config.name, rank, tp.world);
  }
  if (tp.world == 1) return tp;
  if (collectives == nullptr) {
    fail("model {}: tensor-parallel rank {} of {} needs the ranks' collectives (NCCL)",
         config.name, rank, tp.world);
  }
  if (collectives->ranks() != tp.world || collectives->rank() != rank) {
    fail("model {}: tensor-parallel rank {} of {} was given the collectives of rank {} of {}",
         config.name, rank, tp.world, collectives->rank(), collectives->ranks());
  }
  return tp;
}

}  // namespace

CudaModel::CudaModel(const ModelConfig& config, const Weights& weights, cudaStream_t stream)
    : CudaModel(config, weights, stream, tensor_parallel_shape(config, 1), 0) {}

CudaModel::CudaModel(const ModelConfig& config, const Weights& weights, cudaStream_t stream,
                     const TensorParallelShape& tp, int rank, RankCollectives* collectives)
    : config_(config),
      tp_(joinable(config, tp, rank, collectives)),
      rank_(rank),
      collectives_(tp.world > 1 ? collectives : nullptr),
      rank_config_(rank_model_config(config, tp)),
      stream_(stream),
      weights_(gpu_weights_upload(config, weights, tp, rank)),
      gemm_(stream) {
  const AttentionShape s = attention_shape();
  if (s.num_kv_heads <= 0 || s.num_heads % s.num_kv_heads != 0 || s.num_heads / s.num_kv_heads > 8) {
    fail("model {}: {} attention heads over {} KV heads is not supported by the CUDA kernels "
         "(groups of at most 8)", config.name, s.num_heads, s.num_kv_heads);
  }
  if (!decode_attention_supported(s)) {
    fail("model {}: head_dim {} is not supported by the CUDA decode attention (16, 32, 64, 128 "
         "or 256)", config.name, s.head_dim);
  }
  // The CPU reference's frequencies and attention factor (llama3 or YaRN scaling applied), so
  // both executors rotate by the same float32 numbers.
  std::vector<float> inv_freq = rope_inv_freq(config.head_dim, config.rope_theta, config.rope_scaling);
  rope_scale_ = static_cast<float>(rope_attention_factor(config.rope_scaling));
  inv_freq_ = DeviceBuffer(inv_freq.size() * sizeof(float));
  PACELINE_CUDA_CHECK(cudaMemcpy(inv_freq_.as<float>(), inv_freq.data(), inv_freq_.bytes(),
                                 cudaMemcpyHostToDevice));
}

DecodeSplits decode_splits_for(bool fp8) {
  std::string error;
  std::optional<DecodeSplits> s =
      decode_splits_from(std::getenv("PACELINE_DECODE_SPLITS"), fp8, &error);
  if (!s) fail("{}", error);
  const std::optional<bool> prefetch =
      decode_prefetch_from(std::getenv("PACELINE_DECODE_PREFETCH"), &error);
  if (!prefetch) fail("{}", error);
  s->prefetch = *prefetch;
  const std::optional<bool> bulk =
      decode_fp8_bulk_from(std::getenv("PACELINE_DECODE_FP8_BULK"), &error);
  if (!bulk) fail("{}", error);
  s->fp8_bulk = *bulk;
  const std::optional<bool> lead =
      decode_fp8_table_lead_from(std::getenv("PACELINE_DECODE_FP8_TABLE_LEAD"), &error);
  if (!lead) fail("{}", error);
  s->fp8_table_lead = *lead;
  const std::optional<bool> q_next = decode_q_next_from(std::getenv("PACELINE_DECODE_Q_NEXT"), &error);
  if (!q_next) fail("{}", error);
  s->q_next = *q_next;
  return *s;
}

AttentionShape CudaModel::attention_shape() const {
  return {static_cast<int>(rank_config_.num_attention_heads),
          static_cast<int>(rank_config_.num_key_value_heads),
          static_cast<int>(rank_config_.head_dim)};
}

int64_t CudaModel::kv_bytes_per_block() const {
  return rank_config_.kv_bytes_per_token(kv_element_bytes()) * kv_shape_.block_size;
}

void CudaModel::allocate_kv_cache(KvCacheShape shape, bool fp8) {
  kv_shape_ = shape;
  kv_fp8_ = fp8;
  decode_splits_ = decode_splits_for(fp8);
  const auto bytes = static_cast<size_t>(rank_config_.kv_bytes_per_token(kv_element_bytes()) *
                                         shape.block_size * shape.num_blocks);
  kv_cache_ = DeviceBuffer(bytes);
  // Zeros, so that a bug reading an unwritten slot gives a wrong answer, never NaN from noise.
  PACELINE_CUDA_CHECK(cudaMemset(kv_cache_.as<void>(), 0, bytes));
  if (fp8) {
    fp8_clamped_ = DeviceBuffer(sizeof(unsigned long long));
    PACELINE_CUDA_CHECK(cudaMemset(fp8_clamped_.as<void>(), 0, sizeof(unsigned long long)));
  }
}

KvBlockLayout CudaModel::kv_block_layout() const {
  const int64_t layer_elems =
      kv_shape_.num_blocks * kv_shape_.block_size * rank_config_.kv_size();
  KvBlockLayout l;
  l.base = kv_cache_.as<char>();
  const auto element = static_cast<size_t>(kv_element_bytes());
  l.plane_pitch = static_cast<size_t>(layer_elems) * element;
  l.chunk_bytes = static_cast<size_t>(kv_shape_.block_size * rank_config_.kv_size()) * element;
  l.planes = 2 * config_.num_hidden_layers;
  l.num_blocks = kv_shape_.num_blocks;
  return l;
}

LayerCache CudaModel::layer_cache(int64_t layer) const {
  const int64_t layer_elems =
      kv_shape_.num_blocks * kv_shape_.block_size * rank_config_.kv_size();
  LayerCache c;
  if (kv_fp8_) {
    c.k8 = kv_cache_.as<uint8_t>() + 2 * layer * layer_elems;
    c.v8 = c.k8 + layer_elems;
    c.fp8_clamped = fp8_clamped_.as<unsigned long long>();
  } else {
    c.k = kv_cache_.as<bf16>() + 2 * layer * layer_elems;
    c.v = c.k + layer_elems;
  }
  c.block_size = static_cast<int>(kv_shape_.block_size);
  c.num_slots = kv_shape_.num_blocks * kv_shape_.block_size;
  return c;
}

void CudaModel::forward(const StepCounts& n, const StepBuffers& in, Activations& a) {
  const ModelConfig& c = config_;
  const ModelConfig& r = rank_config_;  // this rank's heads, KV heads and MLP columns
  const int64_t hidden = c.hidden_size;
  const int64_t inter = r.intermediate_size;
  const int64_t qkv_width = r.q_size() + 2 * r.kv_size();
  const auto eps = static_cast<float>(c.rms_norm_eps);
  const AttentionShape shape = attention_shape();
  const RowInputs rows = in.row_inputs();
  // The step's leading rows of one-token sequences: the small-M GEMM (gemm.h).
  const int64_t small = in.small_gemm_rows();
  if (n.rows == 0) return;
  // Tensor parallelism: rank 0's o_proj and down_proj add to the residual (beta 1); the other
  // ranks' write their partial sums over their copy of it (beta 0); the all-reduce then leaves
  // residual + the ranks' partials on every rank. One rank: beta 1 and nothing else.
  const float residual_beta = rank_ == 0 ? 1.0f : 0.0f;
  const auto join_residual = [&] {
    if (collectives_ != nullptr) {
      collectives_->all_reduce_sum_f32(a.residual.as<float>(),
                                       static_cast<size_t>(n.rows * hidden), stream_);
    }
  };

  if (tp_.world == 1) {
    PACELINE_CUDA_CHECK(launch_embedding(rows.tokens, weights_.embed_tokens.as<bf16>(), hidden,
                                         n.rows, a.residual.as<float>(), stream_));
  } else {  // vocabulary parallel: this rank's rows, zeros for the others' tokens, then the sum
    PACELINE_CUDA_CHECK(launch_embedding_slice(rows.tokens, weights_.embed_tokens.as<bf16>(),
                                               rank_ * tp_.vocab, tp_.vocab, hidden, n.rows,
                                               a.residual.as<float>(), stream_));
    join_residual();
  }
  for (int64_t layer = 0; layer < c.num_hidden_layers; ++layer) {
    const GpuLayerWeights& w = weights_.layers[static_cast<size_t>(layer)];
    const LayerCache cache = layer_cache(layer);
    // Attention block.
    PACELINE_CUDA_CHECK(launch_rms_norm(a.residual.as<float>(), nullptr, w.input_norm.as<float>(),
                                        hidden, eps, n.rows, a.normed.as<bf16>(), stream_));
    gemm_.run_f32(a.normed.as<bf16>(), n.rows, hidden, w.qkv_proj.as<bf16>(), qkv_width,
                  a.qkv.as<float>(), 0.0f, small);
    PACELINE_CUDA_CHECK(launch_qk_norm_rope_store(
        a.qkv.as<float>(), n.rows, shape, c.qk_norm ? w.q_norm.as<float>() : nullptr,
        c.qk_norm ? w.k_norm.as<float>() : nullptr, eps, inv_freq_.as<float>(), rope_scale_, rows,
        cache, stream_));
    if (n.decode_rows > 0) {
      PACELINE_CUDA_CHECK(launch_attention_decode(
          a.qkv.as<float>(), in.decode_rows(), n.decode_rows, decode_splits_, shape, rows, cache,
          a.partial_acc.as<float>(), a.partial_ml.as<float>(), a.attn.as<bf16>(), stream_));
    }
    if (n.tiles > 0) {
      PACELINE_CUDA_CHECK(launch_attention_prefill(a.qkv.as<float>(), in.tiles(), n.tiles, shape,
                                                   rows, cache, a.attn.as<bf16>(), stream_,
                                                   prefill_precision_));
    }
    gemm_.run_f32(a.attn.as<bf16>(), n.rows, r.q_size(), w.o_proj.as<bf16>(), hidden,
                  a.residual.as<float>(), residual_beta, small);
    join_residual();
    // MLP block.
    PACELINE_CUDA_CHECK(launch_rms_norm(a.residual.as<float>(), nullptr,
                                        w.post_attention_norm.as<float>(), hidden, eps, n.rows,
                                        a.normed.as<bf16>(), stream_));
    if (weights_.gate_up_turn > 0) {  // gate and up rows in turns (gate_up_layout.h)
      gemm_.run_swiglu(a.normed.as<bf16>(), n.rows, hidden, w.gate_up_proj.as<bf16>(), inter,
                       a.gate_up.as<float>(), a.act.as<bf16>(), small);
    } else {
      gemm_.run_f32(a.normed.as<bf16>(), n.rows, hidden, w.gate_up_proj.as<bf16>(), 2 * inter,
                    a.gate_up.as<float>(), 0.0f, small);
      PACELINE_CUDA_CHECK(
          launch_swiglu(a.gate_up.as<float>(), inter, n.rows, a.act.as<bf16>(), stream_));
    }
    gemm_.run_f32(a.act.as<bf16>(), n.rows, inter, w.down_proj.as<bf16>(), hidden,
                  a.residual.as<float>(), residual_beta, small);
    join_residual();
  }
  if (n.logits == 0) return;
  PACELINE_CUDA_CHECK(launch_rms_norm(a.residual.as<float>(), in.logit_rows(),
                                      weights_.final_norm.as<float>(), hidden, eps, n.logits,
                                      a.final_normed.as<bf16>(), stream_));
  // Every logit row by the decode path (the small-M kernel when it is on, else cuBLASLt's decode
  // algorithm): a logit row gets the same bits in any step.
  if (collectives_ == nullptr) {
    gemm_.run_f32(a.final_normed.as<bf16>(), n.logits, hidden, weights_.lm_head_data(),
                  tp_.vocab, a.logits.as<float>(), 0.0f, n.logits);
  } else {
    // This rank's vocabulary rows into its slot of vocab_slices (the GEMM may write the logit
    // rows' padding to the chunk: the slot holds it), the slots gathered in place, then joined
    // into whole rows.
    const int64_t slot = gemm_padded_rows(n.logits) * tp_.vocab;
    float* mine = a.vocab_slices.as<float>() + rank_ * slot;
    gemm_.run_f32(a.final_normed.as<bf16>(), n.logits, hidden, weights_.lm_head_data(),
                  tp_.vocab, mine, 0.0f, n.logits);
    collectives_->all_gather_f32(mine, a.vocab_slices.as<float>(), static_cast<size_t>(slot),
                                 stream_);
    PACELINE_CUDA_CHECK(launch_join_vocab_slices(a.vocab_slices.as<float>(), tp_.world, slot,
                                                 n.logits, tp_.vocab, a.logits.as<float>(),
                                                 stream_));
  }
  PACELINE_CUDA_CHECK(
      launch_argmax(a.logits.as<float>(), c.vocab_size, n.logits, a.sampled.as<int32_t>(), stream_));
}

}  // namespace paceline::cuda
