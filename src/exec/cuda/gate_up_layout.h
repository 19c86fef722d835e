#pragma once
// gate_up_proj's rows on the GPU. The checkpoint's order, rank_layer_slices' order, is every gate
// row, then every up row. When the rank's MLP columns are a multiple of kSwigluTurn, the GPU
// holds them in turns instead: gate rows [0, 64), up rows [0, 64), gate rows [64, 128), ..., so
// that one 128-feature tile of the small-M GEMM is the gate and the up of the same 64 columns and
// can write their SwiGLU itself (gemm_small_m.h, launch_gemm_small_m_swiglu). The gate_up
// activations of other rows (cuBLASLt's) come out in the same turns, and the SwiGLU kernel reads
// them so (launch_swiglu's turn). A row's values are the same either way; only where they sit
// changes. Plain C++ (tested on the CPU).
#include <cstdint>
#include <vector>

#include "model/tensor_parallel_slices.h"

namespace paceline::cuda {

// The rank's gate and up slices (rank_layer_slices' gate_up: gate, then up) cut into turns of
// `turn` rows; empty when they cannot be (not two slices of the same shape, or rows not a
// multiple of turn), which leaves gate_up_proj in the checkpoint's order.
inline std::vector<TensorSlice> gate_up_in_turns(const std::vector<TensorSlice>& gate_up,
                                                 int64_t turn) {
  if (turn <= 0 || gate_up.size() != 2 || gate_up[0].rows != gate_up[1].rows ||
      gate_up[0].cols != gate_up[1].cols || gate_up[0].rows % turn != 0) {
    return {};
  }
  std::vector<TensorSlice> turns;
  turns.reserve(static_cast<size_t>(2 * gate_up[0].rows / turn));
  for (int64_t r = 0; r < gate_up[0].rows; r += turn) {
    for (const TensorSlice& s : gate_up) {
      TensorSlice t = s;
      t.row0 = s.row0 + r;
      t.rows = turn;
      turns.push_back(t);
    }
  }
  return turns;
}

}  // namespace paceline::cuda
