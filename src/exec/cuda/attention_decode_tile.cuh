#pragma once
// The steps of one decode work item (attention_decode.cu): listing the items of all rows, the
// copies of a 16-key tile, one tile of the online softmax, and the merge of the block's warps.
#include <cmath>

#include "exec/cuda/attention_decode.cuh"
#include "exec/cuda/kernels.h"
#include "exec/cuda/kv_fp8.cuh"

namespace paceline::cuda::decode {

constexpr int kWarps = 4;   // per block; a piece is cut into rounds of kWarps 16-key tiles
constexpr int kStages = 2;  // tiles in shared memory per warp: one in flight while one computes
constexpr int kMaxRowsPerLaunch = 512;  // bounds the row table in shared memory
constexpr int kMaxKvHeads = 64;
constexpr unsigned kFull = 0xffffffffu;

// An FP8 cache's tile as copied: K and V each [16 keys][HD] bytes, unswizzled (half a bf16 tile).
template <int HD>
constexpr int raw_tile_words() {
  return HeadLayout<HD>::kTileWords / 2;
}
// bf16: STAGES tiles per warp. FP8: STAGES raw tiles per warp, and one bf16 tile per warp that
// the raw tile in turn is widened into for the tensor cores.
template <int HD, int WARPS, int STAGES, bool FP8 = false>
constexpr int staging_words() {
  return FP8 ? WARPS * HeadLayout<HD>::kTileWords + STAGES * WARPS * raw_tile_words<HD>()
             : STAGES * WARPS * HeadLayout<HD>::kTileWords;
}
__host__ __device__ constexpr int prefix_ints(int rows) { return (rows + 1 + 3) / 4 * 4; }
template <int HD, int WARPS, int STAGES, bool FP8 = false>
constexpr int smem_bytes(int rows) {
  return 4 * staging_words<HD, WARPS, STAGES, FP8>() + 4 * prefix_ints(rows) + 16 * rows;
}

// Each row's (row, context, block-table offset) into info and the start of its items into
// prefix (items = pieces x KV heads, KV head fastest so that blocks side by side read the same
// keys' slots); returns the number of items. Every thread of the block calls it.
__device__ inline int list_items(const int32_t* rows, int num_rows, DecodeSplits splits,
                                 int kv_heads, const RowInputs& in, int* prefix, int4* info) {
  __shared__ int warp_sums[32];
  const int tid = threadIdx.x;
  const int threads = blockDim.x;
  for (int i = tid; i < num_rows; i += threads) {
    const int row = rows[i];
    const int ctx = max(in.positions[row] + 1, 0);  // a padding row (-1) has no keys
    const int base = ctx > 0 ? in.seq_block_offset[in.row_seq[row]] : 0;
    info[i] = make_int4(row, ctx, base, 0);
    prefix[i + 1] = decode_split_plan(ctx, splits).count * kv_heads;
  }
  if (tid == 0) prefix[0] = 0;
  __syncthreads();
  // Inclusive scan of prefix[1..num_rows]: a run of entries per thread, then across threads.
  const int per = (num_rows + threads - 1) / threads;
  const int lo = 1 + tid * per;
  const int hi = min(lo + per, num_rows + 1);
  int sum = 0;
  for (int k = lo; k < hi; ++k) sum += prefix[k];
  int incl = sum;
  const int lane = tid % 32;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const int v = __shfl_up_sync(kFull, incl, o);
    if (lane >= o) incl += v;
  }
  if (lane == 31) warp_sums[tid / 32] = incl;
  __syncthreads();
  int run = incl - sum;
  for (int w = 0; w < tid / 32; ++w) run += warp_sums[w];
  for (int k = lo; k < hi; ++k) {
    run += prefix[k];
    prefix[k] = run;
  }
  __syncthreads();
  return prefix[num_rows];
}

// Starts the copies of the 16 keys of a tile into `st` ([16][HD] K, then V): copy j, lane l
// takes key j * kKeysPerCopy + l / kRowChunks, chunk l % kRowChunks. slot_of(k) gives key k's
// slot (a shuffle from the lane holding it).
template <int HD, typename SlotOf>
__device__ __forceinline__ void copy_tile(uint32_t* st, int lane, const bf16* k_head,
                                          const bf16* v_head, int64_t kv_size, SlotOf slot_of) {
  using L = HeadLayout<HD>;
  const int chunk = lane % L::kRowChunks;
#pragma unroll
  for (int j = 0; j < L::kCopies; ++j) {
    const int key = j * L::kKeysPerCopy + lane / L::kRowChunks;
    const int64_t at = static_cast<int64_t>(slot_of(key)) * kv_size + chunk * 8;
    cp_async<16>(smem_address(st + key * L::kRowWords + (chunk ^ L::k_swizzle(key)) * 4),
                 k_head + at);
    cp_async<16>(smem_address(st + 16 * L::kRowWords + key * L::kRowWords +
                              (chunk ^ L::v_swizzle(key)) * 4),
                 v_head + at);
  }
}

// An FP8 cache's copy of a tile into `raw` ([16][HD] bytes of K, then of V): 16-byte copies,
// HD / 16 per key, consecutive lanes on consecutive chunks (whole lines per key, as above).
// Every lane takes part in every slot_of shuffle.
template <int HD, typename SlotOf>
__device__ __forceinline__ void copy_tile_fp8(uint32_t* raw, int lane, const uint8_t* k_head,
                                              const uint8_t* v_head, int64_t kv_size,
                                              SlotOf slot_of) {
  constexpr int kChunks = HD / 16;  // per key row
  constexpr int kTotal = 16 * kChunks;
  constexpr int kRowWords = HD / 4;
#pragma unroll
  for (int it = 0; it < (kTotal + 31) / 32; ++it) {
    const int i = it * 32 + lane;
    const int key = min(i / kChunks, 15);
    const int chunk = i % kChunks;
    const int64_t at = static_cast<int64_t>(slot_of(key)) * kv_size + chunk * 16;
    if (i < kTotal) {
      cp_async<16>(smem_address(raw + key * kRowWords + chunk * 4), k_head + at);
      cp_async<16>(smem_address(raw + 16 * kRowWords + key * kRowWords + chunk * 4), v_head + at);
    }
  }
}

// Widens a warp's raw FP8 tile into the bf16 tile layout tile_update reads (the same swizzled
// chunks copy_tile writes), exactly: every e4m3 value is a bf16 value.
template <int HD>
__device__ __forceinline__ void widen_tile(const uint32_t* raw, uint32_t* st, int lane) {
  using L = HeadLayout<HD>;
  constexpr int kChunks = HD / 16;
  constexpr int kRawRowWords = HD / 4;
  for (int i = lane; i < 2 * 16 * kChunks; i += 32) {
    const int region = i / (16 * kChunks);  // 0: K, 1: V
    const int key = (i % (16 * kChunks)) / kChunks;
    const int c16 = i % kChunks;
    const uint4 r = *reinterpret_cast<const uint4*>(raw + region * 16 * kRawRowWords +
                                                    key * kRawRowWords + c16 * 4);
    const int sw = region == 0 ? L::k_swizzle(key) : L::v_swizzle(key);
    uint32_t* row = st + region * 16 * L::kRowWords + key * L::kRowWords;
    *reinterpret_cast<uint4*>(row + ((2 * c16) ^ sw) * 4) = fp8x8_to_bf16x8(make_uint2(r.x, r.y));
    *reinterpret_cast<uint4*>(row + ((2 * c16 + 1) ^ sw) * 4) = fp8x8_to_bf16x8(make_uint2(r.z, r.w));
  }
}

// One 16-key tile of a warp, staged at `st`: scores of the group's heads (row g of S is head
// g), the online softmax in base 2, and o += p . v. Lane (g, c) keeps head g's running max and
// its share of the sum, and the accumulators of heads 2c, 2c + 1 (Oᵀ's columns).
template <int HD>
__device__ __forceinline__ void tile_update(const uint32_t* st, int lane, int tb, int k_end,
                                            const uint32_t (&qa)[HeadLayout<HD>::kKWords],
                                            float& m_run, float& l_run,
                                            float (&acc)[HeadLayout<HD>::kSteps][4]) {
  using L = HeadLayout<HD>;
  const int g = lane / 4;
  const int c = lane % 4;
  float s[2][4];
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    uint32_t kw[L::kKWords];
#pragma unroll
    for (int i = 0; i < L::kNK; ++i) {
      load_words<L::kCK>(kw + i * L::kCK, st + L::k_word(half * 8 + g, L::k_element(i * L::kCK, c)));
    }
    s[half][0] = s[half][1] = s[half][2] = s[half][3] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < L::kSteps; ++kk) {
      mma_bf16(s[half], qa[2 * kk], 0u, qa[2 * kk + 1], 0u, kw[2 * kk], kw[2 * kk + 1]);
    }
  }
  // Keys tb + 8 half + 2c + e; those past the piece (a clamped copy) are masked.
  float mx = -INFINITY;
#pragma unroll
  for (int half = 0; half < 2; ++half) {
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      if (tb + half * 8 + 2 * c + e >= k_end) s[half][e] = -INFINITY;
      mx = fmaxf(mx, s[half][e]);
    }
  }
  mx = fmaxf(mx, __shfl_xor_sync(kFull, mx, 1));
  mx = fmaxf(mx, __shfl_xor_sync(kFull, mx, 2));
  const float m_new = fmaxf(m_run, mx);  // finite: key tb is always inside the piece
  const float alpha = exp2f(m_run - m_new);
  uint32_t pb[2];
  float psum = 0.0f;
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    pb[half] = pack_bf16(exp2f(s[half][0] - m_new), exp2f(s[half][1] - m_new));
    const float2 p = unpack_bf16(pb[half]);  // sum what the product weighs
    psum += p.x + p.y;
  }
  l_run = l_run * alpha + psum;
  m_run = m_new;
  const float a_lo = __shfl_sync(kFull, alpha, 8 * c);      // head 2c's lanes have g = 2c
  const float a_hi = __shfl_sync(kFull, alpha, 8 * c + 4);  // and head 2c + 1's, g = 2c + 1

  const uint32_t* sv = st + 16 * L::kRowWords;
  uint32_t vw[4][L::kVWords];
#pragma unroll
  for (int v = 0; v < 4; ++v) {
    const int key = (v / 2) * 8 + 2 * c + v % 2;
#pragma unroll
    for (int i = 0; i < L::kNV; ++i) {
      load_words<L::kCV>(vw[v] + i * L::kCV, sv + L::v_word(key, L::v_element(i * L::kCV, g)));
    }
  }
#pragma unroll
  for (int mt = 0; mt < L::kSteps; ++mt) {
    acc[mt][0] *= a_lo;
    acc[mt][1] *= a_hi;
    acc[mt][2] *= a_lo;
    acc[mt][3] *= a_hi;
    // Vᵀ rows (elements) x keys: pair the two keys' copies of each element.
    mma_bf16(acc[mt], __byte_perm(vw[0][mt], vw[1][mt], 0x5410),
             __byte_perm(vw[0][mt], vw[1][mt], 0x7632), __byte_perm(vw[2][mt], vw[3][mt], 0x5410),
             __byte_perm(vw[2][mt], vw[3][mt], 0x7632), pb[0], pb[1]);
  }
}

// The warps' states into shared memory (over the staging, once every warp is done with it):
// m and l [warps][8], o [warps][8][HD].
template <int HD, int WARPS>
__device__ __forceinline__ void merge_warps(uint32_t* smem, int warp, int lane, int group,
                                            float m_run, float l_run,
                                            const float (&acc)[HeadLayout<HD>::kSteps][4]) {
  using L = HeadLayout<HD>;
  float* sm_m = reinterpret_cast<float*>(smem);
  float* sm_l = sm_m + WARPS * 8;
  float* sm_o = sm_l + WARPS * 8;
  const int g = lane / 4;
  const int c = lane % 4;
  l_run += __shfl_xor_sync(kFull, l_run, 1);
  l_run += __shfl_xor_sync(kFull, l_run, 2);
  __syncthreads();
  if (c == 0) {
    sm_m[warp * 8 + g] = m_run;
    sm_l[warp * 8 + g] = l_run;
  }
  float* o0 = sm_o + (warp * 8 + 2 * c) * HD;
  float* o1 = o0 + HD;
#pragma unroll
  for (int mt = 0; mt < L::kSteps; ++mt) {
    const int d = L::v_element(mt, g);
    if (2 * c < group) o0[d] = acc[mt][0], o0[d + 1] = acc[mt][2];
    if (2 * c + 1 < group) o1[d] = acc[mt][1], o1[d + 1] = acc[mt][3];
  }
  __syncthreads();
}

// Combines the warps (merge_warps' shared memory) into the block's piece for each head h of the
// group: o unnormalized, (max, sum) in base 2. A row of one piece gets its output directly
// (a / l, the bits the merge would give: its weight is exp2(0) = 1); otherwise the piece goes
// to partial_* at index first + h * max_splits.
template <int HD, int WARPS>
__device__ __forceinline__ void write_piece(const uint32_t* smem, int group, int max_splits,
                                            int64_t first, bool single, bf16* out_row,
                                            float* partial_acc, float* partial_ml) {
  const float* sm_m = reinterpret_cast<const float*>(smem);
  const float* sm_l = sm_m + WARPS * 8;
  const float* sm_o = sm_l + WARPS * 8;
  for (int t = threadIdx.x; t < group * HD; t += blockDim.x) {
    const int h = t / HD;
    const int d = t % HD;
    float mm = -INFINITY;
#pragma unroll
    for (int w = 0; w < WARPS; ++w) mm = fmaxf(mm, sm_m[w * 8 + h]);
    float a = 0.0f, l = 0.0f;
#pragma unroll
    for (int w = 0; w < WARPS; ++w) {
      const float f = exp2f(sm_m[w * 8 + h] - mm);  // a warp without tiles has -inf: 0
      a += f * sm_o[(w * 8 + h) * HD + d];
      l += f * sm_l[w * 8 + h];
    }
    if (single) {
      out_row[t] = __float2bfloat16(a / l);
      continue;
    }
    const int64_t idx = first + static_cast<int64_t>(h) * max_splits;
    partial_acc[idx * HD + d] = a;
    if (d == 0) {
      partial_ml[idx * 2] = mm;
      partial_ml[idx * 2 + 1] = l;
    }
  }
}

}  // namespace paceline::cuda::decode
