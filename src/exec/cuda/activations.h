#pragma once
// The forward's scratch memory for a step of up to `rows` rows and `logits` logit rows. A CUDA
// graph is captured on one Activations and replayed on the same addresses, so graphs get their
// own, sized once; the eager path's grows with the largest step seen.
#include <cstdint>

#include "exec/cuda/device_buffer.h"
#include "model/config.h"

namespace paceline::cuda {

struct Activations {
  DeviceBuffer residual;     // f32 [rows, hidden]
  DeviceBuffer normed;       // bf16 [rows, hidden]
  DeviceBuffer qkv;          // f32 [rows, q_size + 2 kv_size]
  DeviceBuffer attn;         // bf16 [rows, q_size]
  DeviceBuffer gate_up;      // f32 [rows, 2 intermediate]
  DeviceBuffer act;          // bf16 [rows, intermediate]
  DeviceBuffer partial_acc;  // f32 [decode rows, heads, splits, head_dim]
  DeviceBuffer partial_ml;   // f32 [decode rows, heads, splits, 2]
  DeviceBuffer final_normed; // bf16 [logits, hidden]
  DeviceBuffer logits;       // f32 [logits, vocab]
  // Tensor parallelism only (world > 1): the ranks' lm_head slices gathered rank-major, each
  // rank's slot [logit rows padded to the GEMM's chunk][vocab / world]; f32, logits x vocab.
  DeviceBuffer vocab_slices;
  DeviceBuffer sampled;      // int32 [logits]
  int64_t rows = 0;
  int64_t decode_rows = 0;
  int64_t logit_rows = 0;

  // Grows to hold the step; returns whether any address changed. c: the rank's widths
  // (CudaModel::rank_config: its heads, KV heads and MLP columns; the vocabulary whole).
  // world: the tensor-parallel ranks (more than one adds vocab_slices).
  bool reserve(const ModelConfig& c, int64_t rows, int64_t decode_rows, int64_t logit_rows,
               int num_splits, int world = 1);
  // Bytes per row, per decode row and per logit row, for sizing the KV cache around them.
  static int64_t bytes_per_row(const ModelConfig& c);
  static int64_t bytes_per_decode_row(const ModelConfig& c, int num_splits);
  static int64_t bytes_per_logit_row(const ModelConfig& c, int world = 1);
};

}  // namespace paceline::cuda
