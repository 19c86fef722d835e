#pragma once
// Launchers of the CUDA executor's kernels. Plain types only, so that host code compiled by g++
// and the .cu files compiled by nvcc share this header. Every launcher returns the launch's
// error (cudaGetLastError) for the caller to check; none synchronizes.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "exec/cuda/decode_split_plan.h"
#include "exec/logit_adjustment.h"

namespace paceline::cuda {

using bf16 = __nv_bfloat16;

// The step's per-row and per-sequence inputs, as device pointers (see step_inputs.h).
struct RowInputs {
  const int32_t* tokens = nullptr;            // [rows]
  const int32_t* positions = nullptr;         // [rows]; -1 marks a padding row (no keys)
  const int64_t* slots = nullptr;             // [rows]; -1: the row writes no K/V
  const int32_t* row_seq = nullptr;           // [rows]: index of the row's sequence
  const int32_t* seq_block_offset = nullptr;  // [seqs]: start of its block table in `blocks`
  const int32_t* blocks = nullptr;            // block tables of all sequences, concatenated
};

// The paged KV cache of one layer: K and V each [blocks][kv_heads][block_size][head_dim] (kv_row
// below), slot = block * block_size + offset. Either bfloat16 (k, v) or FP8 e4m3 (k8, v8;
// --kv-cache-dtype fp8), stored unscaled (a scale of 1, vLLM's default for a checkpoint without
// calibrated k/v scales): the kernels write and read whichever pair is set.
struct LayerCache {
  bf16* k = nullptr;
  bf16* v = nullptr;
  int block_size = 16;
  uint8_t* k8 = nullptr;
  uint8_t* v8 = nullptr;
  int64_t num_slots = 0;  // slots of k and v (0: not said; the bulk tensor copies need it)
  // FP8: where the K/V store counts the values it clamped to e4m3's +-448 (beyond it, or NaN);
  // nullptr: not counted.
  unsigned long long* fp8_clamped = nullptr;
  __host__ __device__ bool fp8() const { return k8 != nullptr; }
};

struct AttentionShape {
  int num_heads = 0;
  int num_kv_heads = 0;
  int head_dim = 0;
};

// A layer's K (and V) plane is head-major inside each block: [block][KV head][offset][head_dim],
// so that one head's keys of a block are one contiguous run (2 KB for 16 keys of 128 e4m3
// values, where a slot-major plane gave 16 pieces of 128 bytes, 1 KB apart). A block is still one
// contiguous run of block_size x kv_heads x head_dim elements, which the host tier and the
// prefix cache copy whole. The row (of head_dim elements) of key `offset` of block `block`, KV
// head `kv_head`:
__host__ __device__ inline int64_t kv_row(int64_t block, int offset, int kv_head, int kv_heads,
                                          int block_size) {
  return (block * kv_heads + kv_head) * block_size + offset;
}
// ... and of a slot (block x block_size + offset).
__host__ __device__ inline int64_t kv_slot_row(int64_t slot, int kv_head, int kv_heads,
                                               int block_size) {
  return kv_row(slot / block_size, static_cast<int>(slot % block_size), kv_head, kv_heads,
                block_size);
}

// residual[r] = table[tokens[r]], converted to float32.
cudaError_t launch_embedding(const int32_t* tokens, const bf16* table, int64_t hidden, int rows,
                             float* residual, cudaStream_t stream);
// A tensor-parallel rank's part of a vocabulary-parallel embedding: residual[r] =
// table[tokens[r] - first] for a token of its rows [first, first + count), zeros for any other;
// the ranks' all-reduce of the residual then leaves every row's embedding on each rank.
cudaError_t launch_embedding_slice(const int32_t* tokens, const bf16* table, int64_t first,
                                   int64_t count, int64_t hidden, int rows, float* residual,
                                   cudaStream_t stream);

// out[r] = weight * x[src] / rms(x[src]), src = gather ? gather[r] : r. x is float32, out bf16.
cudaError_t launch_rms_norm(const float* x, const int32_t* gather, const float* weight,
                            int64_t width, float eps, int rows, bf16* out, cudaStream_t stream);
// The same by a loop over memory (rows of any width): launch_rms_norm gives its bits.
cudaError_t launch_rms_norm_loop(const float* x, const int32_t* gather, const float* weight,
                                 int64_t width, float eps, int rows, bf16* out,
                                 cudaStream_t stream);

// Per row of qkv (float32, [rows][q_size + 2 kv_size]): RMSNorm over each q and k head when
// q_norm is set (Qwen3), RoPE ("rotate half") at the row's position with inv_freq and cos and sin
// times rope_scale (YaRN's attention factor, else 1), q rewritten in place, and k and v stored in
// bf16 at the row's slot of the layer's cache (FP8: rounded to nearest, saturated to +-448, and
// the values beyond that range, NaN included, added to *cache.fp8_clamped when it is set).
cudaError_t launch_qk_norm_rope_store(float* qkv, int rows, AttentionShape shape,
                                      const float* q_norm, const float* k_norm, float eps,
                                      const float* inv_freq, float rope_scale, RowInputs in,
                                      LayerCache cache, cudaStream_t stream);

// Decode attention (one query token per row, causal over the row's own context) for the rows
// listed in `rows`. A row of context ctx is cut into decode_split_plan(ctx, splits).count pieces
// of `chunk` keys (decode_split_plan.h); each (row, KV head, piece) is one work item, and a persistent grid works
// through the items (attention_decode.cu). The plan depends only on the row's own context and
// the fixed constants in `splits`, never on the batch, so a row gets the same bits in any batch,
// eager or replayed from a CUDA graph. partial_acc: [num_rows][num_heads][max_splits][head_dim],
// partial_ml: [..][max_splits][2] (scratch). head_dim must be 16, 32, 64, 128 or 256, the group
// <= 8, KV heads <= 64.
bool decode_attention_supported(AttentionShape shape);
// Writes out ([rows][q_size], bf16) for the listed rows; rows without keys (padding) get zeros.
// Two kernels: the attention over the pieces, then their merge.
cudaError_t launch_attention_decode(const float* qkv, const int32_t* rows, int num_rows,
                                    DecodeSplits splits, AttentionShape shape, RowInputs in,
                                    LayerCache cache, float* partial_acc, float* partial_ml,
                                    bf16* out, cudaStream_t stream);
// The same attention with another pipeline shape (warps per block, shared-memory stages: 4 and
// 2, 4 and 3, 8 and 2), for the benchmark in tests/cuda; head_dim 128 only. Another warp count
// deals the tiles another way, so results match launch_attention_decode to rounding only.
cudaError_t launch_attention_decode_variant(int warps, int stages, const float* qkv,
                                            const int32_t* rows, int num_rows, DecodeSplits splits,
                                            AttentionShape shape, RowInputs in, LayerCache cache,
                                            float* partial_acc, float* partial_ml, bf16* out,
                                            cudaStream_t stream);

// The operands of prefill attention's two products (--prefill-attention-dtype): bfloat16, or FP8
// e4m3 (attention_prefill_fp8.cu: q, K, the probabilities and V in e4m3, float32 accumulation;
// sm_89 and newer). Shapes the FP8 kernel does not cover stay bf16.
enum class PrefillPrecision { bf16, fp8 };
bool prefill_attention_fp8_supported(AttentionShape shape);

// Prefill attention over tiles of consecutive rows of one sequence (tiles: [num_tiles][3] =
// sequence, first row, row count <= prefill_tile_rows(shape, precision)), each row causal over
// its sequence's cached prefix and the rows before it.
int prefill_tile_rows(AttentionShape shape, PrefillPrecision precision = PrefillPrecision::bf16);
cudaError_t launch_attention_prefill(const float* qkv, const int32_t* tiles, int num_tiles,
                                     AttentionShape shape, RowInputs in, LayerCache cache,
                                     bf16* out, cudaStream_t stream,
                                     PrefillPrecision precision = PrefillPrecision::bf16);

// out[r][i] = silu(gate) * up with gate_up[r] = [gate (width) | up (width)], float32 in, bf16 out;
// turn kSwigluTurn: gate_up[r] in turns of kSwigluTurn gate then kSwigluTurn up columns (the
// layout of gate_up_layout.h; width % kSwigluTurn == 0). No other turn is taken.
inline constexpr int64_t kSwigluTurn = 64;
cudaError_t launch_swiglu(const float* gate_up, int64_t width, int rows, bf16* out,
                          cudaStream_t stream, int64_t turn = 0);

// Tensor parallelism: the lm_head's vocabulary slices of `world` ranks, gathered rank-major
// (slice s's row r at slices + s * slice_stride + r * per_rank), joined into whole rows:
// out[r][s * per_rank + j] = slice s's [r][j], for rows [0, rows).
cudaError_t launch_join_vocab_slices(const float* slices, int world, int64_t slice_stride,
                                     int rows, int64_t per_rank, float* out, cudaStream_t stream);

// out[r] = index of the largest of logits[r] (the lowest index among equals).
cudaError_t launch_argmax(const float* logits, int64_t vocab, int rows, int32_t* out,
                          cudaStream_t stream);

// One row to sample (temperature > 0): which row of the logits, its parameters, and the uniform
// number u = sample_uniform(seed, position) of its draw. top_k <= 0 keeps every token.
// min_p, top-k and top-p apply in the host sampler's order.
struct SampleRow {
  double temperature = 1.0;
  double top_p = 1.0;
  double u = 0.0;
  double min_p = 0.0;  // 0: off; else drops weights below it first (the top token weighs 1)
  int64_t top_k = -1;
  int32_t row = 0;
  int32_t unused = 0;
};

// out[i] = the token sample_token (src/exec/sampler.cpp) draws from logits[rows[i].row] with
// rows[i]'s parameters and uniform number. rows is on the device. Each row takes a cluster of
// `cluster` blocks (2, 4 or 8; 0: sample_cluster_size's choice); the tokens do not depend on it.
cudaError_t launch_sample(const float* logits, int64_t vocab, const SampleRow* rows, int num_rows,
                          int32_t* out, cudaStream_t stream, int cluster = 0);
// The cluster size a launch of num_rows rows takes: sample_cluster_fewest_waves, or what
// PACELINE_SAMPLE_CLUSTER fixes (2, 4 or 8).
int sample_cluster_size(int num_rows);
// The fewest waves of clusters on this device for num_rows rows, then the most blocks a row (8, 4
// or 2). The default since 2026-12-03 (docs/performance.md, "Session 17").
int sample_cluster_fewest_waves(int num_rows);
// The clusters of `cluster` blocks (2, 4 or 8) of the sampling kernel this device holds at once.
int sample_cluster_room(int cluster);

// logits[a.row * vocab + a.token] = adjusted_logit(that, a) for each of the n adjustments (on the
// device; each (row, token) at most once): logit_bias and penalties, before launch_sample.
cudaError_t launch_logit_adjustments(float* logits, int64_t vocab,
                                     const LogitAdjustment* adjustments, int n,
                                     cudaStream_t stream);
// Logprobs (src/exec/logprobs.h) of rows that asked: log_softmax of logits[row] at the chosen
// token (greedy[row] when sampled < 0, else sampled_tokens[sampled]) and the num_top (<= 20)
// highest, descending, ties: lower id first. The row's max and log-sum-exp are reduced in one
// pass; the top entries in num_top passes, each the best after the one before.
inline constexpr int kMaxGpuTopLogprobs = 20;
struct LogprobRow {
  int32_t row = 0;
  int32_t sampled = -1;
  int32_t num_top = 0;
  int32_t unused = 0;
};
struct LogprobResult {
  int32_t token = 0;
  float logprob = 0.0f;
  int32_t top_tokens[kMaxGpuTopLogprobs] = {};
  float top_logprobs[kMaxGpuTopLogprobs] = {};
};
cudaError_t launch_logprobs(const float* logits, int64_t vocab, const LogprobRow* rows,
                            int num_rows, const int32_t* greedy, const int32_t* sampled_tokens,
                            LogprobResult* out, cudaStream_t stream);

}  // namespace paceline::cuda
