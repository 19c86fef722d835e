#pragma once
// The forward pass of Qwen3 and Llama-3.x dense models on one GPU: bf16 weights and KV cache,
// float32 residual stream and accumulation. Mirrors CpuModel (exec/cpu/cpu_model.h) step for
// step; the kernels are in kernels.h, the GEMMs in gemm.h. Everything is enqueued on one stream
// and nothing synchronizes, so one forward can be captured into a CUDA graph.
#include <cuda_runtime.h>

#include <cstdint>

#include "exec/cuda/activations.h"
#include "exec/cuda/device_buffer.h"
#include "exec/cuda/gemm.h"
#include "exec/cuda/gpu_weights.h"
#include "exec/cuda/host_kv_tier.h"
#include "exec/cuda/rank_collectives.h"
#include "exec/cuda/step_inputs.h"
#include "exec/executor.h"
#include "model/config.h"
#include "model/tensor_parallel_shape.h"
#include "model/weights.h"

namespace paceline::cuda {

// The decode split plan of a cache of FP8 (else bf16) elements, PACELINE_DECODE_SPLITS and
// PACELINE_DECODE_PREFETCH applied; fails with a variable's error when it is malformed.
DecodeSplits decode_splits_for(bool fp8);

struct StepCounts {
  int rows = 0;
  int logits = 0;
  int decode_rows = 0;
  int tiles = 0;
};

class CudaModel {
 public:
  // Uploads the weights; the KV cache is allocated by allocate_kv_cache, once the caller knows
  // how much memory is left for it. One GPU: tensor-parallel rank 0 of 1.
  CudaModel(const ModelConfig& config, const Weights& weights, cudaStream_t stream);
  // Rank `rank` of tp.world (docs/tensor-parallel.md): its weight slices, and its heads, KV heads
  // and MLP columns in every width. With more than one rank, `collectives` (this rank's, which
  // must outlive the model) joins the ranks in the forward: rank 0's o_proj and down_proj add to
  // the residual, the others' write their partial sums, and an all-reduce sums them; each rank's
  // lm_head rows are all-gathered into whole rows of logits. Refused without them.
  CudaModel(const ModelConfig& config, const Weights& weights, cudaStream_t stream,
            const TensorParallelShape& tp, int rank, RankCollectives* collectives = nullptr);

  const ModelConfig& config() const { return config_; }
  const TensorParallelShape& tensor_parallel() const { return tp_; }
  int rank() const { return rank_; }
  // The widths this rank computes with (rank_model_config): its heads, KV heads and MLP
  // columns; what sizes its activations and its KV cache.
  const ModelConfig& rank_config() const { return rank_config_; }
  int64_t weight_bytes() const { return weights_.bytes; }
  AttentionShape attention_shape() const;

  // fp8: e4m3 elements (1 byte) instead of bfloat16 (2).
  void allocate_kv_cache(KvCacheShape shape, bool fp8 = false);
  KvCacheShape kv_cache_shape() const { return kv_shape_; }
  bool kv_fp8() const { return kv_fp8_; }
  int64_t kv_element_bytes() const { return kv_fp8_ ? 1 : 2; }
  int64_t kv_bytes_per_block() const;
  // Where each block's K and V planes lie in the cache (the host tier's copies).
  KvBlockLayout kv_block_layout() const;
  // FP8 cache: the device counter of K/V values its store clamped to +-448 (or NaN) since the
  // cache was allocated; nullptr for a bf16 cache.
  const unsigned long long* fp8_clamped_counter() const {
    return kv_fp8_ ? fp8_clamped_.as<unsigned long long>() : nullptr;
  }

  // Enqueues the forward of the uploaded step: logits of its logit rows into acts.logits and
  // their greedy tokens into acts.sampled. acts must hold counts (Activations::reserve).
  void forward(const StepCounts& counts, const StepBuffers& in, Activations& acts);

  // The decode attention's split plan (decode_split_plan.h): the cache type's, unless
  // PACELINE_DECODE_SPLITS names another; set by allocate_kv_cache. Its max_splits sizes the
  // partials (Activations).
  DecodeSplits decode_splits() const { return decode_splits_; }
  // The prefill attention's operands (kernels.h); set before the first forward.
  void set_prefill_precision(PrefillPrecision p) { prefill_precision_ = p; }
  PrefillPrecision prefill_precision() const { return prefill_precision_; }

  // Whether decode rows go through the small-M GEMM (gemm.h); set before any graph capture.
  void set_small_m_gemm(bool on) { gemm_.set_small_m(on); }
  bool small_m_gemm() const { return gemm_.small_m(); }
  bool prefill_gemm_plan() const { return gemm_.prefill_plan(); }

 private:
  LayerCache layer_cache(int64_t layer) const;

  ModelConfig config_;
  TensorParallelShape tp_;
  int rank_ = 0;
  RankCollectives* collectives_ = nullptr;  // more than one rank only
  ModelConfig rank_config_;
  cudaStream_t stream_;
  GpuWeights weights_;
  Gemm gemm_;
  DeviceBuffer inv_freq_;  // f32 [head_dim / 2], with the llama3 or YaRN scaling applied
  float rope_scale_ = 1.0f;  // YaRN's attention factor on cos and sin (1 otherwise)
  DeviceBuffer kv_cache_;  // bf16 or e4m3 [layers][K, V][blocks][kv_heads][block_size][head_dim]
  KvCacheShape kv_shape_;
  bool kv_fp8_ = false;
  DeviceBuffer fp8_clamped_;  // one unsigned long long (FP8 cache only)
  PrefillPrecision prefill_precision_ = PrefillPrecision::bf16;
  DecodeSplits decode_splits_ = kDecodePlanBf16;
};

}  // namespace paceline::cuda
