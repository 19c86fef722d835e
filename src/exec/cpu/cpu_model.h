#pragma once
// The reference forward pass of Qwen3 and Llama-3.x dense models on the CPU, in float32, over a
// paged KV cache. One call computes a whole StepPlan: sequences of different lengths and start
// positions (prefill chunks, decodes) batched as one ragged run of concatenated tokens.
#include <cstdint>
#include <vector>

#include "exec/cpu/cpu_weights.h"
#include "exec/cpu/kv_cache.h"
#include "exec/cpu/rope.h"
#include "exec/cpu/tensor_parallel.h"
#include "exec/cpu/thread_pool.h"
#include "exec/executor.h"
#include "model/config.h"
#include "model/weights.h"
#include "sched/step_plan.h"

namespace paceline {

class CpuModel {
 public:
  // Converts the weights to float32 once and allocates the cache. num_threads sizes both the
  // attention thread pool and OpenBLAS (a process-wide setting). tensor_parallel_size > 1 splits
  // the model into that many ranks computed in turn (exec/cpu/tensor_parallel.h); 1 is the
  // unsplit model.
  CpuModel(const ModelConfig& config, const Weights& weights, KvCacheShape kv_shape,
           int num_threads, int tensor_parallel_size = 1);

  const ModelConfig& config() const { return config_; }
  KvCacheShape kv_cache_shape() const { return cache_.shape(); }
  PagedKvCache& kv_cache() { return cache_; }
  int tensor_parallel_size() const { return tp_.world; }

  // Writes each sequence's new keys and values into its blocks, then returns the logits of the
  // last num_logits tokens of every sequence, row-major [sum of num_logits][vocab], sequences in
  // plan order and rows in position order. Throws paceline::Error on a malformed plan (token
  // out of vocabulary, block table too short or pointing outside the cache).
  std::vector<float> forward(const StepPlan& plan);

  // The attention thread pool, free between forwards (the executor samples rows on it).
  ThreadPool& pool() { return pool_; }

 private:
  struct Batch;  // the plan flattened to rows: positions, slots, attention spans, logit rows

  Batch flatten(const StepPlan& plan) const;
  void attention_block(int64_t layer, const Batch& batch);
  void attention_rank(int rank, int64_t layer, const Batch& batch, float* out, float beta);
  void mlp_block(int64_t layer, int64_t rows);
  std::vector<float> logits(const Batch& batch);
  // Rank r's weights of a layer (the whole layer when the model is not split).
  const CpuLayerWeights& layer_of(int rank, int64_t layer) const;

  ModelConfig config_;
  CpuWeights weights_;
  TensorParallelShape tp_;
  std::vector<CpuRankWeights> ranks_;  // empty when the model is not split
  PagedKvCache cache_;
  RotaryEmbedding rope_;
  ThreadPool pool_;

  // Activations of the step in flight, kept between steps to reuse their memory.
  std::vector<float> residual_;  // [rows, hidden]
  std::vector<float> normed_;    // [rows, hidden]
  std::vector<float> qkv_;       // [rows, q_size + 2 kv_size]
  std::vector<float> attn_out_;  // [rows, q_size]
  std::vector<float> gate_up_;   // [rows, 2 intermediate]
  std::vector<float> act_;       // [rows, intermediate]
  std::vector<float> cos_sin_;   // [rows, head_dim]
  std::vector<std::vector<float>> partials_;  // [ranks][rows, hidden]: row-parallel outputs
};

}  // namespace paceline
