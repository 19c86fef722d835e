#pragma once
// The projections of decode rows: y[m, n] = x[m, k] . w[n, k] for a few rows, bf16 in, float32
// accumulation, on the tensor cores (wgmma.m64nNk16, N = 8..64) without padding the rows to
// a GEMM library's tile. Plain types only (shared by g++ and nvcc).
//
// The weight is the MMA's A operand (64 output features x 16 k) and the rows are its B operand
// (16 k x N rows), so the rows pad to 8, not 128. A block of one warpgroup owns kSmallMFeatures
// features, up to kSmallMRows rows and one piece of k (split-K, fixed by (n, k) and the device
// alone: small_m_plan). The k of the piece goes by in k-blocks of kSmallMChunk, each one stage
// of a cp.async pipeline in shared memory (kSmallMStages deep, one less for 32 and 64 rows so
// that three blocks fit an SM): the block's 128 weight rows and the group's rows of x (128-byte
// rows in wgmma's 128-byte swizzle), so x costs half the weights' bytes in shared memory at 64
// rows and almost nothing at 1.
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
inline constexpr int64_t kSmallMStages = 4;        // k-blocks in flight or in shared memory, at most
// Shared memory a block may take so that three run on an SM (sm_90: 228 KB an SM, 1 KB of it
// reserved per block); a group of 32 or 64 rows takes one stage fewer to stay under it.
inline constexpr int64_t kSmallMSharedPerBlock = 75 * 1024;
inline constexpr int64_t kSmallMMaxPieces = 8;     // split-K pieces at most (a cluster's blocks)

// Clusters of p blocks (p = 1 .. kSmallMMaxPieces) that the device holds at once: a cluster's
// blocks must share a GPC, so this is less than the SMs' room for blocks divided by p, and by
// how much depends on the device's GPCs (H200, 3 blocks an SM: 396 blocks alone, 198 pairs, 92
// clusters of 4, 69 of 5, 45 of 8).
struct SmallMClusterRoom {
  int64_t clusters[kSmallMMaxPieces + 1] = {};
};

// How (k, n) is cut: pieces of blocks_per_piece k-blocks, one block per (row group, feature
// tile, piece), the pieces of a tile one cluster. The pieces are chosen for the fewest k-blocks
// on the busiest SM: the waves the device needs for the tiles' clusters times the k-blocks of a
// piece, the fewer pieces on a tie, at most kSmallMMaxPieces (the portable cluster size). A
// function of (k, n) and the device only, never of the rows: a row gets the same bits in any
// batch on a given device.
struct SmallMPlan {
  int64_t tiles = 0;             // feature tiles of kSmallMFeatures
  int64_t blocks_per_piece = 0;  // k-blocks of kSmallMChunk k per piece
  int64_t pieces = 0;            // split-K pieces
};
inline SmallMPlan small_m_plan(int64_t k, int64_t n, const SmallMClusterRoom& room) {
  SmallMPlan best;
  best.tiles = (n + kSmallMFeatures - 1) / kSmallMFeatures;
  const int64_t kblocks = (k + kSmallMChunk - 1) / kSmallMChunk;
  int64_t best_cost = -1;
  for (int64_t want = 1; want <= kSmallMMaxPieces && want <= kblocks; ++want) {
    const int64_t per_piece = (kblocks + want - 1) / want;
    const int64_t pieces = (kblocks + per_piece - 1) / per_piece;
    const int64_t at_once = room.clusters[pieces];
    if (at_once < 1) continue;  // no room for a cluster this size
    const int64_t waves = (best.tiles + at_once - 1) / at_once;
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

// This device's room for clusters (queried once) and the plan of (k, n) on it.
const SmallMClusterRoom& gemm_small_m_cluster_room();
SmallMPlan gemm_small_m_plan(int64_t k, int64_t n);

// The clusters (feature tiles) of a launch of `rows` rows of (k, n), and how many of them the
// device holds at once: when it holds fewer, the rest run in a second wave.
cudaError_t gemm_small_m_cluster_fit(int rows, int64_t k, int64_t n, int* clusters, int* resident);

// y[m, :] = beta * y[m, :] + x[m, :] . w^T for m < rows (1 <= rows <= kSmallMLaunchRows, in
// groups of kSmallMRows, each computed as if alone); y is float32 (y_bf16 false) or bf16, row
// pitch n; x row pitch k. beta == 0 does not read y.
cudaError_t launch_gemm_small_m(const bf16* x, int rows, int64_t k, const bf16* w, int64_t n,
                                void* y, bool y_bf16, float beta, cudaStream_t stream);

// gate_up and SwiGLU in one call: w holds gate_up's 2 width rows in turns of
// kSwigluTurn (gate rows [64 b, + 64), then up rows [64 b, + 64), for b = 0, 1, ...: one feature
// tile of the kernel is gate and up of the same 64 columns), and act[m, i] = silu(gate) * up in
// bf16, row pitch width, for m < rows (1 <= rows <= kSmallMLaunchRows; width % kSwigluTurn ==
// 0). The plan is that of the plain call of n = 2 width, and each act value is computed from the
// sums that call would have written, exactly as the SwiGLU kernel does: the same bits as the plain
// call followed by launch_swiglu.
static_assert(kSmallMFeatures == 2 * kSwigluTurn, "a feature tile is one turn of gate and up");
cudaError_t launch_gemm_small_m_swiglu(const bf16* x, int rows, int64_t k, const bf16* w,
                                       int64_t width, bf16* act, cudaStream_t stream);

}  // namespace paceline::cuda
