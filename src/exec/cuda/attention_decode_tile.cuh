#pragma once
// The steps of one decode work item (attention_decode.cu): listing the items of all rows, the
// copies of a 16-key tile, one tile of the online softmax, and the merge of the block's warps.
#include <cmath>

#include "exec/cuda/attention_decode.cuh"
#include "exec/cuda/kernels.h"
#include "exec/cuda/kv_fp8.cuh"

namespace paceline::cuda::decode {

constexpr int kWarps = 4;   // per block; a piece is cut into rounds of kWarps 16-key tiles
constexpr int kStages = 2;  // bf16 tiles per warp in shared memory: one copied, one computed
// FP8 tiles per warp: a tile is half the bytes, so twice the tiles stay in flight (three while one
// computes) in the bf16 kernel's shared memory (3 blocks per SM at head_dim 128).
constexpr int kStagesFp8 = 4;
constexpr int kMaxRowsPerLaunch = 512;  // bounds the row table in shared memory
constexpr int kMaxKvHeads = 64;
constexpr unsigned kFull = 0xffffffffu;

// An FP8 cache's tile in shared memory: K and V each [16 keys][HD] e4m3 bytes (half a bf16
// tile), the 16-byte chunks of a key's row swizzled (chunk ^ k_swizzle(key), chunk ^
// v_swizzle(key)) for the fragment reads of tile_update: lanes 0-15 of an 8-byte K read are keys
// g = 0..3 at chunks 2i + c / 2, of a V read keys 2c + e at chunks 4i + g / 2, so the XORs by 0,
// 2, 4, 6 put each half-warp on 32 different banks. The fragments are those of the bf16 tile
// (HeadLayout), widened in registers.
//
// BULK (head_dim 128, a tile copied by two bulk tensor copies, DecodeSplits::fp8_bulk): the copy
// engine's 128-byte swizzle, chunk ^ key % 8 for K and V alike (the tile 1024-byte aligned). The
// same reads meet no more bank conflicts: a K read's 16 chunks of lanes g, c / 2 and a V read's of
// lanes g / 2, c are two of each of eight values, in two 128-byte wavefronts as the 256 bytes need.
template <int HD, bool BULK = false>
struct Fp8Layout {
  static_assert(!BULK || HD == 128, "bulk copies of 128-byte rows");
  static constexpr int kRowChunks = HD / 16;  // 16-byte chunks per key
  static constexpr int kTileWords = HD * 8;   // 2 x 16 x HD bytes
  static constexpr bool kSwizzle = kRowChunks >= 8;
  __device__ static int k_swizzle(int key) {
    return BULK ? key & 7 : kSwizzle ? (key & 3) << 1 : 0;
  }
  __device__ static int v_swizzle(int key) {
    return BULK ? key & 7 : kSwizzle ? ((key >> 1) & 3) << 1 : 0;
  }
  // Byte of element `e` of key `key`, in the K region and in the V region (after K).
  __device__ static int k_byte(int key, int e) {
    return key * HD + ((e / 16) ^ k_swizzle(key)) * 16 + e % 16;
  }
  __device__ static int v_byte(int key, int e) {
    return 16 * HD + key * HD + ((e / 16) ^ v_swizzle(key)) * 16 + e % 16;
  }
};

template <int HD, bool FP8>
constexpr int tile_words() {
  return FP8 ? Fp8Layout<HD>::kTileWords : HeadLayout<HD>::kTileWords;
}
// STAGES tiles per warp, stage s of warp w at (s * WARPS + w) * tile_words.
template <int HD, int WARPS, int STAGES, bool FP8 = false>
constexpr int staging_words() {
  return STAGES * WARPS * tile_words<HD, FP8>();
}
__host__ __device__ constexpr int prefix_ints(int rows) { return (rows + 1 + 3) / 4 * 4; }
// BULK: 1,024 bytes more to align the staging for the copy engine's swizzle, and a barrier (8
// bytes) per stage of each warp after the rows' table.
template <int HD, int WARPS, int STAGES, bool FP8 = false, bool BULK = false>
constexpr int smem_bytes(int rows) {
  return 4 * staging_words<HD, WARPS, STAGES, FP8>() + 4 * prefix_ints(rows) + 16 * rows +
         (BULK ? 1024 + 8 * STAGES * WARPS : 0);
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
// takes key j * kKeysPerCopy + l / kRowChunks, chunk l % kRowChunks. row_of(k) gives key k's row
// in the planes (kv_row, kernels.h; a shuffle from the lane holding it).
template <int HD, typename RowOf>
__device__ __forceinline__ void copy_tile(uint32_t* st, int lane, const bf16* k_plane,
                                          const bf16* v_plane, RowOf row_of) {
  using L = HeadLayout<HD>;
  const int chunk = lane % L::kRowChunks;
#pragma unroll
  for (int j = 0; j < L::kCopies; ++j) {
    const int key = j * L::kKeysPerCopy + lane / L::kRowChunks;
    const int64_t at = static_cast<int64_t>(row_of(key)) * HD + chunk * 8;
    cp_async<16>(smem_address(st + key * L::kRowWords + (chunk ^ L::k_swizzle(key)) * 4),
                 k_plane + at);
    cp_async<16>(smem_address(st + 16 * L::kRowWords + key * L::kRowWords +
                              (chunk ^ L::v_swizzle(key)) * 4),
                 v_plane + at);
  }
}

// An FP8 cache's copy of a tile into `raw` (Fp8Layout): 16-byte copies, HD / 16 per key,
// consecutive lanes on consecutive chunks (whole lines per key, as above). Every lane takes part
// in every row_of shuffle.
template <int HD, typename RowOf>
__device__ __forceinline__ void copy_tile_fp8(uint32_t* raw, int lane, const uint8_t* k_plane,
                                              const uint8_t* v_plane, RowOf row_of) {
  using F = Fp8Layout<HD>;
  constexpr int kChunks = F::kRowChunks;
  constexpr int kTotal = 16 * kChunks;
  constexpr int kRowWords = HD / 4;
#pragma unroll
  for (int it = 0; it < (kTotal + 31) / 32; ++it) {
    const int i = it * 32 + lane;
    const int key = min(i / kChunks, 15);
    const int chunk = i % kChunks;
    const int64_t at = static_cast<int64_t>(row_of(key)) * HD + chunk * 16;
    if (i < kTotal) {
      cp_async<16>(smem_address(raw + key * kRowWords + (chunk ^ F::k_swizzle(key)) * 4),
                   k_plane + at);
      cp_async<16>(smem_address(raw + 16 * kRowWords + key * kRowWords +
                                (chunk ^ F::v_swizzle(key)) * 4),
                   v_plane + at);
    }
  }
}

// N words (N = 1, 2 or 4) of f16 pairs from 2N e4m3 bytes in shared memory, in order (the bf16
// tile's pairs, HeadLayout::k_element): one conversion a pair.
template <int N>
__device__ __forceinline__ void load_fp8_f16_words_in_order(uint32_t* dst, const uint8_t* src) {
  if constexpr (N == 4) {
    const uint2 r = *reinterpret_cast<const uint2*>(src);
    e4m3x4_to_f16x4(r.x, dst[0], dst[1]);
    e4m3x4_to_f16x4(r.y, dst[2], dst[3]);
  } else if constexpr (N == 2) {
    e4m3x4_to_f16x4(*reinterpret_cast<const uint32_t*>(src), dst[0], dst[1]);
  } else {
    dst[0] = e4m3x2_to_f16x2(*reinterpret_cast<const uint16_t*>(src));
  }
}

// The A fragments of Vᵀ for two keys a, b (N words each, 2N e4m3 bytes of each key in shared
// memory): lo[j] = (a, b) of the piece's element 2j, hi[j] = (a, b) of element 2j + 1, the words
// the bf16 tile's byte permutes make (HeadLayout::v_element's order), straight from the bytes.
template <int N>
__device__ __forceinline__ void load_fp8_key_pair(uint32_t* lo, uint32_t* hi, const uint8_t* a,
                                                  const uint8_t* b) {
  if constexpr (N == 4) {
    const uint2 ra = *reinterpret_cast<const uint2*>(a);
    const uint2 rb = *reinterpret_cast<const uint2*>(b);
    e4m3_across_to_f16x2<0x5140>(ra.x, rb.x, lo[0], hi[0]);
    e4m3_across_to_f16x2<0x7362>(ra.x, rb.x, lo[1], hi[1]);
    e4m3_across_to_f16x2<0x5140>(ra.y, rb.y, lo[2], hi[2]);
    e4m3_across_to_f16x2<0x7362>(ra.y, rb.y, lo[3], hi[3]);
  } else if constexpr (N == 2) {
    const uint32_t ra = *reinterpret_cast<const uint32_t*>(a);
    const uint32_t rb = *reinterpret_cast<const uint32_t*>(b);
    e4m3_across_to_f16x2<0x5140>(ra, rb, lo[0], hi[0]);
    e4m3_across_to_f16x2<0x7362>(ra, rb, lo[1], hi[1]);
  } else {
    e4m3_across_to_f16x2<0x5140>(*reinterpret_cast<const uint16_t*>(a),
                                 *reinterpret_cast<const uint16_t*>(b), lo[0], hi[0]);
  }
}

// One 16-key tile of a warp, staged at `st`: scores of the group's heads (row g of S is head
// g), the online softmax in base 2, and o += p . v. Lane (g, c) keeps head g's running max and
// its share of the sum, and the accumulators of heads 2c, 2c + 1 (Oᵀ's columns).
//
// FP8 (a tile of Fp8Layout): each lane reads the e4m3 bytes of the same fragments, in the bf16
// tile's element order, and widens them in registers, exactly, to f16 by the conversion
// instruction (kv_fp8.cuh): K's pairs as they lie (no permute), V's A fragments from each pair of
// keys' bytes (load_fp8_key_pair: one permute for four values); q and p are f16, the products
// accumulate in f32. Until session 37 each key's four bytes were regrouped as elements (0, 2)
// and (1, 3) for the conversion and V's fragments paired after it (three permutes for four
// values; the same bits, PRMT 66 -> 18 in the head_dim-128 kernel); until session 33 the
// widening was by integer operations to the values times 2^-8 (seven operations for four values);
// before session 13, to bf16 by a conversion and three more operations a pair (docs/cuda.md,
// docs/performance.md).
//
// BULK: the tile in Fp8Layout<HD, true>, a whole block copied, so the keys of a partial tile past
// the context are whatever the slots hold (stale values, never-written bytes, NaNs): their scores
// are masked as always, and their V values are zeroed (0 x NaN would be NaN).
template <int HD, bool FP8 = false, bool BULK = false>
__device__ __forceinline__ void tile_update(const uint32_t* st, int lane, int tb, int k_end,
                                            const uint32_t (&qa)[HeadLayout<HD>::kKWords],
                                            float& m_run, float& l_run,
                                            float (&acc)[HeadLayout<HD>::kSteps][4]) {
  using L = HeadLayout<HD>;
  using F = Fp8Layout<HD, BULK>;
  const int g = lane / 4;
  const int c = lane % 4;
  float s[2][4];
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    uint32_t kw[L::kKWords];
#pragma unroll
    for (int i = 0; i < L::kNK; ++i) {
      if constexpr (FP8) {
        load_fp8_f16_words_in_order<L::kCK>(
            kw + i * L::kCK, reinterpret_cast<const uint8_t*>(st) +
                                 F::k_byte(half * 8 + g, L::k_element(i * L::kCK, c)));
      } else {
        load_words<L::kCK>(kw + i * L::kCK, st + L::k_word(half * 8 + g, L::k_element(i * L::kCK, c)));
      }
    }
    s[half][0] = s[half][1] = s[half][2] = s[half][3] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < L::kSteps; ++kk) {
      if constexpr (FP8) {
        mma_f16(s[half], qa[2 * kk], 0u, qa[2 * kk + 1], 0u, kw[2 * kk], kw[2 * kk + 1]);
      } else {
        mma_bf16(s[half], qa[2 * kk], 0u, qa[2 * kk + 1], 0u, kw[2 * kk], kw[2 * kk + 1]);
      }
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
    float2 p;  // sum what the product weighs
    if constexpr (FP8) {
      pb[half] = pack_f16(exp2f(s[half][0] - m_new), exp2f(s[half][1] - m_new));
      p = unpack_f16(pb[half]);
    } else {
      pb[half] = pack_bf16(exp2f(s[half][0] - m_new), exp2f(s[half][1] - m_new));
      p = unpack_bf16(pb[half]);
    }
    psum += p.x + p.y;
  }
  l_run = l_run * alpha + psum;
  m_run = m_new;
  // The accumulators times their heads' alpha. Past an item's first tiles a head's maximum rarely
  // moves, and where none of the warp's did every alpha is 1 (exp2f of 0, tested as it is): acc
  // times 1 is acc, so the warp skips the shuffles and multiplications, the same bits either way.
  if (!__all_sync(kFull, alpha == 1.0f)) {
    const float a_lo = __shfl_sync(kFull, alpha, 8 * c);      // head 2c's lanes have g = 2c
    const float a_hi = __shfl_sync(kFull, alpha, 8 * c + 4);  // and head 2c + 1's, g = 2c + 1
#pragma unroll
    for (int mt = 0; mt < L::kSteps; ++mt) {
      acc[mt][0] *= a_lo;
      acc[mt][1] *= a_hi;
      acc[mt][2] *= a_lo;
      acc[mt][3] *= a_hi;
    }
  }

  if constexpr (FP8) {
    // va[h][0][mt], va[h][1][mt]: keys 8h + 2c and 8h + 2c + 1 of Vᵀ's rows g and g + 8.
    uint32_t va[2][2][L::kVWords];
    const uint8_t* bytes = reinterpret_cast<const uint8_t*>(st);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int key = h * 8 + 2 * c;
#pragma unroll
      for (int i = 0; i < L::kNV; ++i) {
        const int e = L::v_element(i * L::kCV, g);
        load_fp8_key_pair<L::kCV>(va[h][0] + i * L::kCV, va[h][1] + i * L::kCV,
                                  bytes + F::v_byte(key, e),
                                  bytes + F::v_byte(key + 1, e));
      }
    }
    if constexpr (BULK) {
      if (tb + 16 > k_end) {  // a partial tile (the same for the whole warp)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int key = tb + h * 8 + 2 * c;
          const uint32_t keep =
              (key < k_end ? 0x0000ffffu : 0u) | (key + 1 < k_end ? 0xffff0000u : 0u);
#pragma unroll
          for (int mt = 0; mt < L::kSteps; ++mt) va[h][0][mt] &= keep, va[h][1][mt] &= keep;
        }
      }
    }
#pragma unroll
    for (int mt = 0; mt < L::kSteps; ++mt) {
      mma_f16(acc[mt], va[0][0][mt], va[0][1][mt], va[1][0][mt], va[1][1][mt], pb[0], pb[1]);
    }
  } else {
    uint32_t vw[4][L::kVWords];
#pragma unroll
    for (int v = 0; v < 4; ++v) {
      const int key = (v / 2) * 8 + 2 * c + v % 2;
#pragma unroll
      for (int i = 0; i < L::kNV; ++i) {
        load_words<L::kCV>(vw[v] + i * L::kCV,
                           st + 16 * L::kRowWords + L::v_word(key, L::v_element(i * L::kCV, g)));
      }
    }
#pragma unroll
    for (int mt = 0; mt < L::kSteps; ++mt) {
      // Vᵀ rows (elements) x keys: pair the two keys' copies of each element.
      const uint32_t a0 = __byte_perm(vw[0][mt], vw[1][mt], 0x5410);
      const uint32_t a1 = __byte_perm(vw[0][mt], vw[1][mt], 0x7632);
      const uint32_t a2 = __byte_perm(vw[2][mt], vw[3][mt], 0x5410);
      const uint32_t a3 = __byte_perm(vw[2][mt], vw[3][mt], 0x7632);
      mma_bf16(acc[mt], a0, a1, a2, a3, pb[0], pb[1]);
    }
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
