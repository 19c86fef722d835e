#pragma once
// Where a tensor-parallel rank's weights come from: for each matrix the forward multiplies with,
// the rectangles of Hugging Face's tensors that make up rank r's slice, in the order the executor
// stacks them (docs/tensor-parallel.md, "The split"). Device-agnostic, so that the CUDA ranks load
// exactly the slices the CPU split computes with (tests/cpu_forward/tensor_parallel_slices_test.cpp
// checks the two against each other); at one rank every slice is its whole tensor.
#include <cstdint>
#include <string>
#include <vector>

#include "model/config.h"
#include "model/tensor_parallel_shape.h"
#include "model/weights.h"

namespace paceline {

// Rows [row0, row0 + rows) and columns [col0, col0 + cols) of the row-major 2-D tensor `name`,
// whose whole shape is [total_rows, total_cols].
struct TensorSlice {
  std::string name;
  int64_t total_rows = 0;
  int64_t total_cols = 0;
  int64_t row0 = 0;
  int64_t rows = 0;
  int64_t col0 = 0;
  int64_t cols = 0;

  bool whole() const { return rows == total_rows && cols == total_cols; }
  int64_t numel() const { return rows * cols; }
};

// One layer's matrices on rank `rank`: q, k and v rows of its heads (column parallel, stacked in
// that order), o_proj's columns of its query heads (row parallel), gate rows then up rows of its
// MLP columns, down_proj's columns of the same MLP columns.
struct RankLayerSlices {
  std::vector<TensorSlice> qkv;
  TensorSlice o_proj;
  std::vector<TensorSlice> gate_up;
  TensorSlice down;
};

RankLayerSlices rank_layer_slices(const ModelConfig& config, const TensorParallelShape& shape,
                                  int rank, int64_t layer);

// The lm_head's vocabulary rows of rank `rank` (of the embedding when the two are tied).
TensorSlice rank_lm_head_slice(const ModelConfig& config, const TensorParallelShape& shape,
                               int rank);

// The input embedding's vocabulary rows of rank `rank`, the same rows as its lm_head slice (a
// vocabulary-parallel embedding: a token outside them embeds as zeros on this rank and the
// ranks' rows are summed; tied, the one slice serves as both).
TensorSlice rank_embedding_slice(const ModelConfig& config, const TensorParallelShape& shape,
                                 int rank);

// All of `name`, a [rows, cols] tensor (what every rank holds whole, the norms).
TensorSlice whole_tensor(std::string name, int64_t rows, int64_t cols);

// The tensor a slice is cut from, checked to have the slice's whole shape (checked_tensor: an
// error naming it otherwise).
const TensorView& slice_source(const Weights& weights, const TensorSlice& slice);

// The slice's elements, row-major [rows][cols], from its source tensor `view` (slice_source): as
// float32 (any source type), or as the source's own bytes (dtype_size(view.dtype) each).
void slice_to_f32(const TensorView& view, const TensorSlice& slice, float* out);
void slice_copy_bytes(const TensorView& view, const TensorSlice& slice, void* out);

}  // namespace paceline
