#pragma once
// The projections of decode rows: y[m, n] = x[m, k] . w[n, k] for a few rows, bf16 in, float32
// accumulation, on the tensor cores (mma.sync m16n8k16) without padding the rows to
// a GEMM library's tile. Plain types only (shared by g++ and nvcc).
//
// The weight is the MMA's A operand (16 output features x 16 k) and the rows are its B operand
// (16 k x 8 rows), so a weight fragment feeds one MMA per 8 rows and the rows pad to 8, not 128.
// A block of 4 warps owns kSmallMFeatures features, up to kSmallMRows rows and one piece of k
// (split-K, fixed by (n, k) alone: small_m_plan). The k of the piece goes by in k-blocks of
// kSmallMChunk, each one stage of a kSmallMStages-deep cp.async pipeline in shared memory: the
// block's 128 weight rows and the group's rows of x (128-byte rows, swizzled so ldmatrix reads
// them without bank conflicts). Each warp multiplies 32 features by every 8-row column tile, so
// x costs a quarter of the weights' bytes in shared memory at 64 rows and almost nothing at 1.
// The pieces of a feature tile are one thread-block cluster: each block leaves its partial sums
// in its shared memory and the cluster's blocks add them over distributed shared memory, each a
// share of the tile's outputs, in piece order (no workspace, no atomics). A launch takes up to 4
// groups of kSmallMRows rows, the groups the fastest grid dimension: the blocks of one (tile,
// piece) run side by side and read the weights from HBM once between them.
//
// Batch invariance, by construction: an output element y[m, n] is the sum over the MMAs of a
// fixed sequence of k-steps (the piece's k-blocks in order, the 4 MMAs of 16 k of a k-block in
// order), each MMA adding the products of weight row n and row m's own x into row m's own
// accumulator column; the pieces are fixed by (n, k) and added in piece order 0, 1, ... Nothing
// in that depends on how many rows share the call, on the row's column in its MMA, or on the
// other rows' values: a row gets the same bits at M = 1 and at M = 64, first or last, in a decode
// step or a mixed one, eagerly or in a CUDA graph.
#include <cuda_runtime.h>

#include <cstdint>

#include "exec/cuda/kernels.h"

namespace paceline::cuda {

inline constexpr int64_t kSmallMRows = 64;         // rows of a block (8 MMA columns of 8)
inline constexpr int64_t kSmallMLaunchRows = 256;  // rows of one launch (up to 4 row groups)
inline constexpr int64_t kSmallMFeatures = 128;    // output features of a block (4 warps x 32)
inline constexpr int64_t kSmallMChunk = 64;        // k of a k-block (one pipeline stage)
inline constexpr int64_t kSmallMStages = 4;        // k-blocks in flight or in shared memory
inline constexpr int64_t kSmallMMaxPieces = 8;     // split-K pieces at most (a cluster's blocks)
// Blocks that run at once: the H200's 132 SMs, two blocks each. A constant, not the device's
// count, so that a plan (and a row's bits) is the same on any device.
inline constexpr int64_t kSmallMSlots = 264;

// How (k, n) is cut: pieces of blocks_per_piece k-blocks, one block per (row group, feature
// tile, piece). The pieces are chosen for the fewest k-blocks on the busiest SM: waves of
// kSmallMSlots blocks times the k-blocks of a piece, the fewer pieces on a tie, at most
// kSmallMMaxPieces (the portable cluster size). A function of (k, n) only, never of the rows.
struct SmallMPlan {
  int64_t tiles = 0;             // feature tiles of kSmallMFeatures
  int64_t blocks_per_piece = 0;  // k-blocks of kSmallMChunk k per piece
  int64_t pieces = 0;            // split-K pieces
};
inline SmallMPlan small_m_plan(int64_t k, int64_t n) {
  SmallMPlan best;
  best.tiles = (n + kSmallMFeatures - 1) / kSmallMFeatures;
  const int64_t kblocks = (k + kSmallMChunk - 1) / kSmallMChunk;
  int64_t best_cost = -1;
  for (int64_t want = 1; want <= kSmallMMaxPieces && want <= kblocks; ++want) {
    const int64_t per_piece = (kblocks + want - 1) / want;
    const int64_t pieces = (kblocks + per_piece - 1) / per_piece;
    const int64_t waves = (best.tiles * pieces + kSmallMSlots - 1) / kSmallMSlots;
    const int64_t cost = waves * per_piece;
    if (best_cost < 0 || cost < best_cost) {
      best_cost = cost;
      best.blocks_per_piece = per_piece;
      best.pieces = pieces;
    }
  }
  return best;
}
// Whether the kernel takes a reduction depth k (rows of 16-byte aligned k: k % 8 == 0).
inline bool small_m_supported(int64_t k) {
  return k > 0 && k % 8 == 0;
}
// Sets the kernels' shared-memory size once (also done by the first launch); call it before a
// CUDA graph capture.
cudaError_t prepare_gemm_small_m();

// y[m, :] = beta * y[m, :] + x[m, :] . w^T for m < rows (1 <= rows <= kSmallMLaunchRows, in
// groups of kSmallMRows, each computed as if alone); y is float32 (y_bf16 false) or bf16, row
// pitch n; x row pitch k. beta == 0 does not read y.
cudaError_t launch_gemm_small_m(const bf16* x, int rows, int64_t k, const bf16* w, int64_t n,
                                void* y, bool y_bf16, float beta, cudaStream_t stream);

}  // namespace paceline::cuda
