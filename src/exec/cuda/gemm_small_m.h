#pragma once
// The projections of decode rows: y[m, n] = x[m, k] . w[n, k] for a few rows, bf16 in, float32
// accumulation, on the tensor cores (mma.sync m16n8k16) without padding the rows to
// a GEMM library's tile. Plain types only (shared by g++ and nvcc).
//
// The weight is the MMA's A operand (16 output features x 16 k) and the rows are its B operand
// (16 k x 8 rows), so a weight fragment feeds one MMA per 8 rows and the rows pad to 8, not 128.
// A block of 4 warps owns kSmallMFeatures features, up to kSmallMRows rows and one piece of k
// (split-K, fixed by (n, k) alone: small_m_plan); each warp streams its 16 weight rows with 16-byte
// loads, 256 k at a time, while the block stages those 256 k of x in shared memory. The pieces'
// partial sums go to a workspace and the block that finishes a feature tile last adds them in piece
// order. A launch takes up to 4 groups of kSmallMRows rows, the groups the fastest grid dimension:
// the blocks of one (tile, piece) run side by side and read the weights from HBM once between them.
//
// Batch invariance, by construction: an output element y[m, n] is the sum over the MMAs of a
// fixed sequence of k-steps (the piece's chunks in order, the 4 k-blocks of 64 of a chunk in
// order, the 4 MMAs of a block in order), each MMA adding the products of weight row n and row
// m's own x into row m's own accumulator column; the pieces are fixed by (n, k) and added in
// piece order 0, 1, ... by whichever block comes last (an integer counter says which; no float
// atomics). Nothing in that depends on how many rows share the call, on the row's column in its
// MMA, or on the other rows' values: a row gets the same bits at M = 1 and at M = 64, first or
// last, in a decode step or a mixed one, eagerly or in a CUDA graph.
#include <cuda_runtime.h>

#include <cstdint>

#include "exec/cuda/kernels.h"

namespace paceline::cuda {

inline constexpr int64_t kSmallMRows = 64;         // rows of a block (8 MMA columns of 8)
inline constexpr int64_t kSmallMLaunchRows = 256;  // rows of one launch (up to 4 row groups)
inline constexpr int64_t kSmallMFeatures = 64;     // output features of a block (4 warps x 16)
inline constexpr int64_t kSmallMChunk = 256;       // k per step of a warp (16 loads of 16 bytes)
inline constexpr int64_t kSmallMMaxPieces = 16;    // split-K pieces at most

// How (k, n) is cut: pieces of chunks_per_piece chunks of kSmallMChunk k, one block per (row
// group, feature tile, piece). Enough pieces for about 512 blocks a row group (one wave of the
// H200's 132 SMs at 4 blocks an SM), at most kSmallMMaxPieces. A function of (k, n) only, never
// of the rows.
struct SmallMPlan {
  int64_t tiles = 0;             // feature tiles of kSmallMFeatures
  int64_t chunks_per_piece = 0;  // chunks of kSmallMChunk k per piece
  int64_t pieces = 0;            // split-K pieces
};
inline SmallMPlan small_m_plan(int64_t k, int64_t n) {
  SmallMPlan p;
  p.tiles = (n + kSmallMFeatures - 1) / kSmallMFeatures;
  const int64_t chunks = (k + kSmallMChunk - 1) / kSmallMChunk;
  int64_t want = (512 + p.tiles - 1) / p.tiles;
  want = want < 1 ? 1 : (want > kSmallMMaxPieces ? kSmallMMaxPieces : want);
  p.chunks_per_piece = (chunks + want - 1) / want;
  p.pieces = (chunks + p.chunks_per_piece - 1) / p.chunks_per_piece;
  return p;
}
// Whether the kernel takes a reduction depth k (rows of 16-byte aligned k: k % 8 == 0).
inline bool small_m_supported(int64_t k) {
  return k > 0 && k % 8 == 0;
}
// Floats of workspace and ints of counters that a launch of (k, n) needs at kSmallMLaunchRows.
inline int64_t small_m_workspace_floats(int64_t k, int64_t n) {
  const SmallMPlan p = small_m_plan(k, n);
  return p.pieces > 1 ? p.pieces * kSmallMLaunchRows * n : 0;
}
inline int64_t small_m_counters(int64_t n) {
  return (n + kSmallMFeatures - 1) / kSmallMFeatures * (kSmallMLaunchRows / kSmallMRows);
}

// y[m, :] = beta * y[m, :] + x[m, :] . w^T for m < rows (1 <= rows <= kSmallMLaunchRows, in
// groups of kSmallMRows, each computed as if alone); y is float32
// (y_bf16 false) or bf16, row pitch n; x row pitch k. beta == 0 does not read y. workspace holds
// small_m_workspace_floats(k, n) floats; counters small_m_counters(n) ints, zero before the call
// and zero again after it.
cudaError_t launch_gemm_small_m(const bf16* x, int rows, int64_t k, const bf16* w, int64_t n,
                                void* y, bool y_bf16, float beta, float* workspace,
                                int32_t* counters, cudaStream_t stream);

}  // namespace paceline::cuda
