// The small-M GEMM of decode rows (gemm_small_m.h: the design and why a row's bits do not depend
// on the batch).
#include "exec/cuda/gemm_small_m.h"

namespace paceline::cuda {
namespace {

constexpr int kThreads = 128;                                         // 4 warps, 16 features each
constexpr int kBlocksPerChunk = static_cast<int>(kSmallMChunk / 64);  // k-blocks of 64
// x rows in shared memory: 256 k plus 32 elements, a pitch of 576 bytes (64 mod 128), so the 8
// rows one 16-byte load of a quarter warp touches (two rows, 64 bytes each) hit distinct banks.
constexpr int kXPitch = static_cast<int>(kSmallMChunk) + 32;

__device__ __forceinline__ uint4 load_weights(const bf16* p) {
  // Streamed once: read-only path, not kept in L1.
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

__device__ __forceinline__ void mma_bf16(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2,
                                         uint32_t a3, uint32_t b0, uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

template <typename Out>
__device__ __forceinline__ void store_out(Out* y, float v, float beta);

template <>
__device__ __forceinline__ void store_out<float>(float* y, float v, float beta) {
  *y = beta == 0.0f ? v : __fmaf_rn(beta, *y, v);
}

template <>
__device__ __forceinline__ void store_out<bf16>(bf16* y, float v, float beta) {
  *y = __float2bfloat16_rn(beta == 0.0f ? v : __fmaf_rn(beta, __bfloat162float(*y), v));
}

// One block: rows [64 blockIdx.x, +64) (a group), feature tile blockIdx.y (kSmallMFeatures
// features), split-K piece blockIdx.z. NT column tiles of 8 rows (a group's rows <= 8 NT). The
// groups are the fastest grid dimension, so the blocks of one (tile, piece) run side by side and
// all but the first find the weights in L2.
//
// Fragments (PTX's m16n8k16 layouts, g = lane / 4, t = lane % 4): the MMA's k order is a
// permutation of the real k, the same for the weights and x, so every thread loads 16
// contiguous bytes. In a k-block of 64, thread t holds k [8t, 8t + 8) ("lo") and
// [32 + 8t, 40 + 8t) ("hi") of weight rows g and g + 8 and of x row (8j + g) of column tile j;
// MMA s of the block gives its k slots {2t, 2t + 1} the pair (s % 2) * 4 + {0, 1} and its slots
// {2t + 8, 2t + 9} the pair (s % 2) * 4 + {2, 3} of lo (s < 2) or hi (s >= 2). Over t and s that
// is each of the 64 k once, and the A and B registers carry the same k in the same slots.
// Four blocks an SM (128 registers a thread), three for 8 column tiles (their accumulators
// would spill).
template <int NT, typename Out>
__global__ void __launch_bounds__(kThreads, NT == 8 ? 3 : 4)
    gemm_small_m_kernel(const bf16* __restrict__ x_all, int all_rows, int64_t k,
                        const bf16* __restrict__ w, int64_t n, Out* y_all, float beta,
                        int64_t chunks_per_piece, int pieces, float* workspace_all,
                        int32_t* counters_all) {
  __shared__ __align__(16) bf16 xs[NT * 8][kXPitch];
  __shared__ int last_block;
  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int g = lane / 4;
  const int t = lane % 4;
  const int group = static_cast<int>(blockIdx.x);
  const int64_t tile = blockIdx.y;
  const int piece = static_cast<int>(blockIdx.z);
  // The group's rows, and its own workspace rows and counters.
  const int first_row = group * static_cast<int>(kSmallMRows);
  const int rows = min(static_cast<int>(kSmallMRows), all_rows - first_row);
  const bf16* x = x_all + first_row * k;
  Out* y = y_all + first_row * n;
  float* workspace = workspace_all + static_cast<int64_t>(first_row) * n;
  int32_t* counters = counters_all + static_cast<int64_t>(group) * gridDim.y;
  const int64_t f0 = tile * kSmallMFeatures + warp * 16;  // the warp's first feature
  const bool row0 = f0 + g < n;
  const bool row1 = f0 + g + 8 < n;
  const bf16* w0 = w + (row0 ? (f0 + g) * k : 0);
  const bf16* w1 = w + (row1 ? (f0 + g + 8) * k : 0);
  const int64_t chunks = (k + kSmallMChunk - 1) / kSmallMChunk;
  const int64_t chunk_begin = piece * chunks_per_piece;
  const int64_t chunk_end =
      chunk_begin + chunks_per_piece < chunks ? chunk_begin + chunks_per_piece : chunks;

  float acc[NT][4];
#pragma unroll
  for (int j = 0; j < NT; ++j) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.0f;

  for (int64_t chunk = chunk_begin; chunk < chunk_end; ++chunk) {
    const int64_t k0 = chunk * kSmallMChunk;
    // The warp's weights of this chunk: all 16 loads in flight before anything waits on them.
    uint4 wr[kBlocksPerChunk][4];  // [k-block][row g lo, row g hi, row g+8 lo, row g+8 hi]
#pragma unroll
    for (int b = 0; b < kBlocksPerChunk; ++b) {
      const int64_t lo = k0 + 64 * b + 8 * t;
      const int64_t hi = lo + 32;
      const uint4 zero = make_uint4(0, 0, 0, 0);
      wr[b][0] = row0 && lo < k ? load_weights(w0 + lo) : zero;
      wr[b][1] = row0 && hi < k ? load_weights(w0 + hi) : zero;
      wr[b][2] = row1 && lo < k ? load_weights(w1 + lo) : zero;
      wr[b][3] = row1 && hi < k ? load_weights(w1 + hi) : zero;
    }
    // x of this chunk into shared memory; rows past `rows` and k past the end are zeros.
    constexpr int kVectorsPerRow = static_cast<int>(kSmallMChunk) / 8;
    for (int i = static_cast<int>(threadIdx.x); i < NT * 8 * kVectorsPerRow; i += kThreads) {
      const int r = i / kVectorsPerRow;
      const int col = (i % kVectorsPerRow) * 8;
      uint4 v = make_uint4(0, 0, 0, 0);
      if (r < rows && k0 + col < k) v = __ldg(reinterpret_cast<const uint4*>(x + r * k + k0 + col));
      *reinterpret_cast<uint4*>(&xs[r][col]) = v;
    }
    __syncthreads();
#pragma unroll
    for (int b = 0; b < kBlocksPerChunk; ++b) {
      if (k0 + 64 * b >= k) break;  // the same for every block of this (k, n): k's last chunk
#pragma unroll
      for (int j = 0; j < NT; ++j) {
        const uint4 xlo = *reinterpret_cast<const uint4*>(&xs[j * 8 + g][64 * b + 8 * t]);
        const uint4 xhi = *reinterpret_cast<const uint4*>(&xs[j * 8 + g][64 * b + 32 + 8 * t]);
        mma_bf16(acc[j], wr[b][0].x, wr[b][2].x, wr[b][0].y, wr[b][2].y, xlo.x, xlo.y);
        mma_bf16(acc[j], wr[b][0].z, wr[b][2].z, wr[b][0].w, wr[b][2].w, xlo.z, xlo.w);
        mma_bf16(acc[j], wr[b][1].x, wr[b][3].x, wr[b][1].y, wr[b][3].y, xhi.x, xhi.y);
        mma_bf16(acc[j], wr[b][1].z, wr[b][3].z, wr[b][1].w, wr[b][3].w, xhi.z, xhi.w);
      }
    }
    __syncthreads();  // before the next chunk overwrites xs
  }

  // Accumulator c of column tile j: feature f0 + g (+ 8 for c >= 2), row 8j + 2t + c % 2.
  if (pieces == 1) {
#pragma unroll
    for (int j = 0; j < NT; ++j) {
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        const int64_t f = f0 + g + (c >= 2 ? 8 : 0);
        const int r = j * 8 + 2 * t + c % 2;
        if (r < rows && f < n) store_out(y + r * n + f, acc[j][c], beta);
      }
    }
    return;
  }
  // Partial sums to the workspace [piece][row][n]; the tile's last block adds them in order.
#pragma unroll
  for (int j = 0; j < NT; ++j) {
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      const int64_t f = f0 + g + (c >= 2 ? 8 : 0);
      const int r = j * 8 + 2 * t + c % 2;
      if (r < rows && f < n) {
        workspace[(static_cast<int64_t>(piece) * all_rows + r) * n + f] = acc[j][c];
      }
    }
  }
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) last_block = atomicAdd(&counters[tile], 1) == pieces - 1;
  __syncthreads();
  if (!last_block) return;
  __threadfence();
  for (int i = static_cast<int>(threadIdx.x); i < rows * static_cast<int>(kSmallMFeatures);
       i += kThreads) {
    const int r = i / static_cast<int>(kSmallMFeatures);
    const int64_t f = tile * kSmallMFeatures + i % kSmallMFeatures;
    if (f >= n) continue;
    float sum = 0.0f;
    for (int p = 0; p < pieces; ++p) {
      sum = __fadd_rn(sum, __ldcg(workspace + (static_cast<int64_t>(p) * all_rows + r) * n + f));
    }
    store_out(y + r * n + f, sum, beta);
  }
  if (threadIdx.x == 0) counters[tile] = 0;  // ready for the next call
}

template <int NT, typename Out>
void launch(const bf16* x, int rows, int64_t k, const bf16* w, int64_t n, Out* y, float beta,
            const SmallMPlan& p, float* workspace, int32_t* counters, cudaStream_t stream) {
  const auto groups = static_cast<unsigned>((rows + kSmallMRows - 1) / kSmallMRows);
  const dim3 grid(groups, static_cast<unsigned>(p.tiles), static_cast<unsigned>(p.pieces));
  gemm_small_m_kernel<NT, Out>
      <<<grid, kThreads, 0, stream>>>(x, rows, k, w, n, y, beta, p.chunks_per_piece,
                                      static_cast<int>(p.pieces), workspace, counters);
}

template <typename Out>
void launch_rows(const bf16* x, int rows, int64_t k, const bf16* w, int64_t n, Out* y, float beta,
                 const SmallMPlan& p, float* workspace, int32_t* counters, cudaStream_t stream) {
  // Column tiles: 1, 2, 4 or 8 (a group's rows rounded up); a row's arithmetic is the same in
  // each.
  if (rows <= 8) {
    launch<1>(x, rows, k, w, n, y, beta, p, workspace, counters, stream);
  } else if (rows <= 16) {
    launch<2>(x, rows, k, w, n, y, beta, p, workspace, counters, stream);
  } else if (rows <= 32) {
    launch<4>(x, rows, k, w, n, y, beta, p, workspace, counters, stream);
  } else {
    launch<8>(x, rows, k, w, n, y, beta, p, workspace, counters, stream);
  }
}

}  // namespace

cudaError_t launch_gemm_small_m(const bf16* x, int rows, int64_t k, const bf16* w, int64_t n,
                                void* y, bool y_bf16, float beta, float* workspace,
                                int32_t* counters, cudaStream_t stream) {
  if (rows < 1 || rows > kSmallMLaunchRows || n < 1 || !small_m_supported(k)) {
    return cudaErrorInvalidValue;
  }
  const SmallMPlan p = small_m_plan(k, n);
  if (p.tiles > 65535 || (p.pieces > 1 && (workspace == nullptr || counters == nullptr))) {
    return cudaErrorInvalidValue;
  }
  if (y_bf16) {
    launch_rows(x, rows, k, w, n, static_cast<bf16*>(y), beta, p, workspace, counters, stream);
  } else {
    launch_rows(x, rows, k, w, n, static_cast<float*>(y), beta, p, workspace, counters, stream);
  }
  return cudaGetLastError();
}

}  // namespace paceline::cuda
