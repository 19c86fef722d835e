#pragma once
// A StepPlan flattened to the rows the GPU computes (tokens, positions, slot mapping, block
// tables, which rows give logits, which attention kernel takes which rows), then packed into one
// pinned buffer and sent to the device in one copy.
#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "exec/cuda/device_buffer.h"
#include "exec/cuda/kernels.h"
#include "sched/step_plan.h"

namespace paceline::cuda {

struct HostStep {
  std::vector<int64_t> slots;
  std::vector<int32_t> tokens, positions, row_seq;
  std::vector<int32_t> seq_block_offset, blocks;
  std::vector<int32_t> logit_rows;   // rows whose logits the plan asks for, in output order
  std::vector<int32_t> decode_rows;  // rows of sequences with few tokens: the decode kernel
  std::vector<int32_t> tiles;        // [tiles][3]: the prefill kernel's work
  // Rows [0, small_gemm_rows) are those of sequences with one token (decode): the GEMMs' decode
  // path takes them (the small-M kernel or cuBLASLt's decode algorithm), the other rows the
  // prefill algorithm (gemm.h). host_step_from_plan lays those sequences out first.
  int small_gemm_rows = 0;
  int rows() const { return static_cast<int>(tokens.size()); }
  int num_tiles() const { return static_cast<int>(tiles.size() / 3); }
};

struct StepLimits {
  int64_t vocab_size = 0;
  int64_t num_blocks = 0;
  int64_t block_size = 16;
  int prefill_tile_rows = 16;
  int64_t max_decode_tokens = 8;  // sequences with more tokens go to the prefill kernel
};

// Validates the plan (tokens in the vocabulary, block tables covering the positions with ids
// inside the cache, num_logits in range; errors name the request) and flattens it: the rows of
// sequences with one token first (in plan order), then the others (in plan order): the GEMMs
// take the two groups by different paths (gemm.h). logit_rows stay in plan order.
HostStep host_step_from_plan(const StepPlan& plan, const StepLimits& limits);
// The plan of a decode batch padded to `padded` rows: padding rows have position -1 (no keys),
// slot -1 (no K/V write) and give logits that nobody reads. Every row is a decode row, and every
// row a decode GEMM row.
HostStep host_step_padded(const StepPlan& plan, const StepLimits& limits, int padded);

// Device copy of a HostStep. Sections sit at offsets fixed by the capacities, so that a CUDA
// graph captured on one StepBuffers sees each new step's inputs at the same addresses.
class StepBuffers {
 public:
  // Fixed capacities (graphs): rows, and blocks in all the block tables together.
  void init(int cap_rows, int64_t cap_blocks);
  // Grows as needed (contents lost) to hold `step`, then copies it in; returns whether the
  // device addresses changed.
  bool upload(const HostStep& step, cudaStream_t stream);
  // Copies without growing; throws when `step` does not fit.
  void upload_fixed(const HostStep& step, cudaStream_t stream);

  RowInputs row_inputs() const;
  const int32_t* logit_rows() const { return ptr<int32_t>(off_logit_rows_); }
  const int32_t* decode_rows() const { return ptr<int32_t>(off_decode_rows_); }
  const int32_t* tiles() const { return ptr<int32_t>(off_tiles_); }
  // The uploaded step's small_gemm_rows (a host value: a graph captures it with its launches).
  int small_gemm_rows() const { return small_gemm_rows_; }

 private:
  void layout(int cap_rows, int64_t cap_blocks);
  void copy(const HostStep& step, cudaStream_t stream);
  template <typename T>
  const T* ptr(size_t offset) const {
    return reinterpret_cast<const T*>(device_.as<char>() + offset);
  }

  int small_gemm_rows_ = 0;
  int cap_rows_ = 0;
  int64_t cap_blocks_ = 0;
  size_t off_slots_ = 0, off_tokens_ = 0, off_positions_ = 0, off_row_seq_ = 0;
  size_t off_seq_block_offset_ = 0, off_logit_rows_ = 0, off_decode_rows_ = 0, off_tiles_ = 0;
  size_t off_blocks_ = 0, total_ = 0;
  DeviceBuffer device_;
  PinnedBuffer host_;
};

}  // namespace paceline::cuda
