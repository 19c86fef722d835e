// Prefill attention on FP8 tensor cores (--prefill-attention-dtype fp8): both products,
// S = q . K^T and O = P . V, as mma.sync m16n8k32 with e4m3 operands and float32 accumulation
// (sm_89+). The tiling is the mma.sync bf16 kernel's (attention_prefill_mma.cu): 4 warps, 128
// query slots (row, head of the group) per block, two m16 tiles per warp, keys streamed from the
// paged cache 64 at a time. What changes is where each operand gets its e4m3 form:
// - q: per slot, scaled by 448 / amax(|q|) (e4m3's whole range) when the tile is staged; the
//   inverse scale, times log2(e) / sqrt(head_dim), multiplies the float32 scores.
// - K: an FP8 cache is copied as it is (cp.async, three stages; stored unscaled, so its scale is
//   1); a bf16 cache is copied as bf16 (two stages) and rounded to e4m3, saturating, in shared
//   memory, once per chunk for all warps.
// - P: the online softmax's probabilities times 2^8 (in [0, 256], never saturating). The row sum
//   is an MMA of the same e4m3 P with a column of ones, so the normalization divides by the sum
//   of exactly the values multiplied, and the 2^8 cancels.
// - V: the B operand of m16n8k32 holds four consecutive keys of one head dim per register, and
//   the cache holds V [key][dim], so each chunk's V is transposed once in shared memory (byte
//   permutes in registers) for all warps. The transpose also permutes the keys of each group of
//   32 so that P's A fragments are the S accumulators of the same thread, packed in place, with
//   no shuffles: A column 16h + 4a + i holds key 16h + 8(i / 2) + 2a + i % 2.
// Every chunk's P . V goes into fresh accumulators (two MMAs, 64 products) that are added to O
// with the online rescale in one FMA: O never sits in the tensor core's accumulator across
// chunks, whose FP8 additions Hopper keeps to fewer bits than float32 (DeepSeek-V3's report).
// Causal, varlen and batch invariant as the bf16 kernels: a slot's result depends only on its own
// q and keys (the q scale is its own amax; chunks start at key 0 whatever the tile).
// Speed (H200, 2026-12-03, one Qwen3-8B layer, PACELINE_PREFILL_BENCH=1 CudaPrefillAttentionBench):
// SLOWER than the bf16 wgmma kernel. 8k rows: wgmma bf16 1.823 ms (302 TFLOP/s), mma.sync bf16
// 2.207 (249), this kernel 3.427 (160) from a bf16 cache, 2.856 (193) from an FP8 cache (wgmma
// on an FP8 cache: 2.321, 237); 32k rows: wgmma 26.748 (329), mma.sync 31.810 (277), fp8 50.558
// (174), fp8 from an FP8 cache 41.844 (210); 2,048 rows after 30,720 cached: wgmma 3.350 (318),
// fp8 6.442 (165), fp8 from an FP8 cache 5.303 (201). mma.sync caps it below wgmma whatever the
// operand width, and every 64-key chunk costs two block barriers plus the V transpose (and, from
// a bf16 cache, K's rounding) by all warps before any MMA. Faster needs FA3's design: wgmma with
// e4m3 operands, and V transposed by a producer warpgroup while the consumers compute, not here.
#include <climits>
#include <cstdint>

#include <cuda_fp8.h>

#include "exec/cuda/attention_prefill_fp8.cuh"
#include "exec/cuda/attention_prefill_mma.cuh"
#include "exec/cuda/device_utils.cuh"

namespace paceline::cuda {
namespace {

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kTilesPerWarp = 2;                     // m16 tiles of query slots per warp
constexpr int kSlots = 16 * kTilesPerWarp * kWarps;  // query slots per block
constexpr int kKeys = 64;                            // keys per chunk: two k32 steps of P . V
constexpr float kE4m3Max = 448.0f;
constexpr float kPLog2Scale = 8.0f;   // P is stored times 2^8: more of e4m3's range, exactly
constexpr uint32_t kOnes = 0x38383838u;  // four e4m3 1.0

// Shared memory, in bytes. Row strides are 16 bytes past a multiple of 32 (or 48 past 0), so the
// 8 rows of an ldmatrix fall on distinct banks.
template <int HD, bool FP8_CACHE>
struct Smem {
  static constexpr int kQkDim = HD < 32 ? 32 : HD;  // q . k's reduction, padded to one k32
  static constexpr int kQkStride = kQkDim + 16;     // q and e4m3 K rows
  static constexpr int kV8Stride = HD + 16;         // e4m3 V rows as copied (FP8 cache)
  static constexpr int kRawStride = 2 * (HD + 8);   // bf16 K and V rows as copied (bf16 cache)
  static constexpr int kVtStride = kKeys + 16;      // transposed V: one row per head dim
  static constexpr int kStages = FP8_CACHE ? 3 : 2;
  static constexpr int kKStage = kKeys * (FP8_CACHE ? kQkStride : kRawStride);
  static constexpr int kStage = kKStage + kKeys * (FP8_CACHE ? kV8Stride : kRawStride);
  static constexpr int kQ = 0;
  static constexpr int kScale = kQ + kSlots * kQkStride;    // float per slot: 1 / q's scale
  static constexpr int kStages0 = kScale + kSlots * 4;
  static constexpr int kK8 = kStages0 + kStages * kStage;   // e4m3 K of a bf16 cache
  static constexpr int kVt = kK8 + (FP8_CACHE ? 0 : kKeys * kQkStride);
  static constexpr size_t bytes() { return kVt + HD * kVtStride; }
};

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void cp_async16(void* dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_addr(dst)), "l"(src)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// ldmatrix moves 16-bit elements; as bytes, a thread's word of row r is bytes 4 (lane % 4) to
// 4 (lane % 4) + 3, which is where m16n8k32's 8-bit fragments want their four elements.
__device__ __forceinline__ void ldsm_x4(uint32_t (&r)[4], const uint8_t* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p))
               : "memory");
}
__device__ __forceinline__ void ldsm_x2(uint32_t (&r)[2], const uint8_t* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(smem_addr(p))
               : "memory");
}

// c += a . b: a 16 x 32 (row), b 32 x 8 (col), e4m3, float32 accumulators.
__device__ __forceinline__ void mma_e4m3(float (&c)[4], const uint32_t (&a)[4], uint32_t b0,
                                         uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Four floats as four e4m3 bytes in one word (the first in the low byte), rounded to nearest and
// saturating at +-448.
__device__ __forceinline__ uint32_t e4m3x4(float a, float b, float c, float d) {
  const uint32_t lo = __nv_cvt_float2_to_fp8x2(make_float2(a, b), __NV_SATFINITE, __NV_E4M3);
  const uint32_t hi = __nv_cvt_float2_to_fp8x2(make_float2(c, d), __NV_SATFINITE, __NV_E4M3);
  return lo | hi << 16;
}

// Four bf16 (two words) as four e4m3 bytes.
__device__ __forceinline__ uint32_t bf16x4_to_e4m3x4(uint32_t w0, uint32_t w1) {
  return e4m3x4(__uint_as_float(w0 << 16), __uint_as_float(w0 & 0xffff0000u),
                __uint_as_float(w1 << 16), __uint_as_float(w1 & 0xffff0000u));
}

struct KeySource {
  const int32_t* blocks;  // the sequence's block table
  int block_size;
  int shift;  // log2(block_size) when it is a power of two, else -1
  int kv_heads;
  int kv_head;
  int last_pos;

  // Index of element 0 of `key`'s row of the tile's KV head.
  template <int HD>
  __device__ __forceinline__ int64_t row(int key) const {
    const int block = shift >= 0 ? key >> shift : key / block_size;
    const int offset = shift >= 0 ? key & (block_size - 1) : key % block_size;
    return kv_row(blocks[block], offset, kv_head, kv_heads, block_size) * HD;
  }
};

// Keys [base, base + kKeys) of the tile's KV head into one stage, as the cache holds them (zeros
// past last_pos, so that masked keys multiply finite values): asynchronous copies of 16 bytes,
// committed by the caller.
template <int HD, bool FP8_CACHE>
__device__ __forceinline__ void load_chunk(uint8_t* stage, int base, const KeySource& src,
                                           const LayerCache& cache) {
  using S = Smem<HD, FP8_CACHE>;
  constexpr int kElems = FP8_CACHE ? 16 : 8;  // elements per 16 bytes
  constexpr int kVecs = HD / kElems;          // per row
  constexpr int kKStride = FP8_CACHE ? S::kQkStride : S::kRawStride;
  constexpr int kVStride = FP8_CACHE ? S::kV8Stride : S::kRawStride;
  constexpr int kBytes = FP8_CACHE ? 1 : 2;
  uint8_t* const k_s = stage;
  uint8_t* const v_s = stage + S::kKStage;
  const uint8_t* const k = FP8_CACHE ? cache.k8 : reinterpret_cast<const uint8_t*>(cache.k);
  const uint8_t* const v = FP8_CACHE ? cache.v8 : reinterpret_cast<const uint8_t*>(cache.v);
  for (int i = threadIdx.x; i < kKeys * kVecs; i += kThreads) {
    const int j = i / kVecs;
    const int c = (i % kVecs) * 16;
    const int key = base + j;
    uint8_t* kd = k_s + j * kKStride + c;
    uint8_t* vd = v_s + j * kVStride + c;
    if (key > src.last_pos) {
      *reinterpret_cast<uint4*>(kd) = make_uint4(0, 0, 0, 0);
      *reinterpret_cast<uint4*>(vd) = make_uint4(0, 0, 0, 0);
      continue;
    }
    const int64_t at = src.row<HD>(key) * kBytes + c;
    cp_async16(kd, k + at);
    cp_async16(vd, v + at);
  }
}

// A bf16 cache's K chunk in e4m3, rounded to nearest and saturating (no scale: an FP8 cache
// stores the same values).
template <int HD>
__device__ __forceinline__ void quantize_k(const uint8_t* stage, uint8_t* k8) {
  using S = Smem<HD, false>;
  constexpr int kVecs = HD / 8;
  for (int i = threadIdx.x; i < kKeys * kVecs; i += kThreads) {
    const int j = i / kVecs;
    const int d = (i % kVecs) * 8;
    const uint4 w = *reinterpret_cast<const uint4*>(stage + j * S::kRawStride + 2 * d);
    *reinterpret_cast<uint2*>(k8 + j * S::kQkStride + d) =
        make_uint2(bf16x4_to_e4m3x4(w.x, w.y), bf16x4_to_e4m3x4(w.z, w.w));
  }
}

// The chunk's V transposed for P . V's B fragments: vt[d][32 kk + 16 h + 4 a + i] =
// V[32 kk + 16 h + 8 (i / 2) + 2 a + i % 2][d] (the key order of P's A fragments, see the top).
// A unit is 4 keys x 4 dims: four words in, four words out, eight byte permutes. The lanes of a
// warp take 4 a, 2 h and 4 groups of dims: two-way bank conflicts on both sides.
template <int HD, bool FP8_CACHE>
__device__ __forceinline__ void transpose_v(const uint8_t* stage, uint8_t* vt) {
  using S = Smem<HD, FP8_CACHE>;
  const uint8_t* const v_s = stage + S::kKStage;
  for (int u = threadIdx.x; u < 4 * HD; u += kThreads) {
    const int a = u & 3;
    const int h = (u >> 2) & 1;
    const int kk = (u >> 5) & 1;
    const int d = 4 * (4 * (u >> 6) + ((u >> 3) & 3));
    const int key0 = 32 * kk + 16 * h + 2 * a;
    uint32_t r[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int key = key0 + 8 * (i / 2) + i % 2;
      if constexpr (FP8_CACHE) {
        r[i] = *reinterpret_cast<const uint32_t*>(v_s + key * S::kV8Stride + d);
      } else {
        const uint2 w = *reinterpret_cast<const uint2*>(v_s + key * S::kRawStride + 2 * d);
        r[i] = bf16x4_to_e4m3x4(w.x, w.y);
      }
    }
    const uint32_t lo01 = __byte_perm(r[0], r[1], 0x5140);  // dims 0, 1 of keys 0, 1
    const uint32_t hi01 = __byte_perm(r[0], r[1], 0x7362);  // dims 2, 3 of keys 0, 1
    const uint32_t lo23 = __byte_perm(r[2], r[3], 0x5140);
    const uint32_t hi23 = __byte_perm(r[2], r[3], 0x7362);
    uint8_t* dst = vt + d * S::kVtStride + 32 * kk + 16 * h + 4 * a;
    *reinterpret_cast<uint32_t*>(dst) = __byte_perm(lo01, lo23, 0x5410);
    *reinterpret_cast<uint32_t*>(dst + S::kVtStride) = __byte_perm(lo01, lo23, 0x7632);
    *reinterpret_cast<uint32_t*>(dst + 2 * S::kVtStride) = __byte_perm(hi01, hi23, 0x5410);
    *reinterpret_cast<uint32_t*>(dst + 3 * S::kVtStride) = __byte_perm(hi01, hi23, 0x7632);
  }
}

// The warp's 32 query slots in e4m3, each scaled by 448 / amax(|q|); scale_inv[slot] gets the
// inverse (1 for a slot of zeros or past the tile). Each warp stages only the slots it reads.
template <int HD>
__device__ __forceinline__ void stage_q(const float* qkv, int first_row, int tile_rows,
                                        int kv_head, int group, int qkv_width, uint8_t* q8,
                                        float* scale_inv) {
  constexpr int kQkStride = Smem<HD, true>::kQkStride;
  constexpr int kQkDim = Smem<HD, true>::kQkDim;
  constexpr int kPer = HD >= 32 ? HD / 32 : 1;  // dims per lane
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  for (int i = 0; i < 32; ++i) {
    const int slot = warp * 32 + i;
    const int r = slot / group;
    float x[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    if (r < tile_rows && lane * kPer < HD) {
      const int head = kv_head * group + slot % group;
      const float* q = qkv + static_cast<int64_t>(first_row + r) * qkv_width + head * HD + lane * kPer;
      if constexpr (kPer == 4) {
        const float4 v = *reinterpret_cast<const float4*>(q);
        x[0] = v.x, x[1] = v.y, x[2] = v.z, x[3] = v.w;
      } else if constexpr (kPer == 2) {
        const float2 v = *reinterpret_cast<const float2*>(q);
        x[0] = v.x, x[1] = v.y;
      } else {
        x[0] = *q;
      }
    }
    float amax = 0.0f;
#pragma unroll
    for (int e = 0; e < kPer; ++e) amax = fmaxf(amax, fabsf(x[e]));
    amax = warp_max(amax);
    const float inv = amax > 0.0f ? kE4m3Max / amax : 0.0f;
    const uint32_t packed = e4m3x4(x[0] * inv, x[1] * inv, x[2] * inv, x[3] * inv);
    uint8_t* dst = q8 + slot * kQkStride + lane * kPer;
    // Lanes past HD write the zeros that pad q . k's reduction to 32 (head_dim 16).
    if (lane * kPer < kQkDim) {
      if constexpr (kPer == 4) *reinterpret_cast<uint32_t*>(dst) = packed;
      if constexpr (kPer == 2) *reinterpret_cast<uint16_t*>(dst) = static_cast<uint16_t>(packed);
      if constexpr (kPer == 1) *dst = static_cast<uint8_t>(packed);
    }
    if (lane == 0) scale_inv[slot] = amax > 0.0f ? amax / kE4m3Max : 1.0f;
  }
}

template <int HD, bool FP8_CACHE>
__global__ void __launch_bounds__(kThreads, 2)
    attention_prefill_fp8_kernel(const float* qkv, const int32_t* tiles, AttentionShape shape,
                                 RowInputs in, LayerCache cache, bf16* out) {
  allow_dependent_launch();  // o_proj may fetch its weights meanwhile
  using S = Smem<HD, FP8_CACHE>;
  constexpr int kM = kTilesPerWarp;
  constexpr int kQkSteps = S::kQkDim / 32;
  constexpr int kDimTiles = HD / 8;
  extern __shared__ __align__(16) unsigned char smem[];
  uint8_t* const q8 = smem + S::kQ;
  float* const scale_inv = reinterpret_cast<float*>(smem + S::kScale);
  uint8_t* const stages = smem + S::kStages0;
  uint8_t* const vt = smem + S::kVt;

  // Tiles in reverse, as the mma.sync kernel: the longest rows start first.
  const int tile = gridDim.x - 1 - blockIdx.x;
  const int seq = tiles[tile * 3];
  const int first_row = tiles[tile * 3 + 1];
  const int tile_rows = tiles[tile * 3 + 2];
  const int kv_head = blockIdx.y;
  const int group = shape.num_heads / shape.num_kv_heads;
  const int q_size = shape.num_heads * HD;
  const int kv_size = shape.num_kv_heads * HD;
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  const int g = lane / 4;    // fragment row group
  const int tig = lane % 4;  // thread in group
  const int lm_mat = lane / 8;
  const int lm_row = lane % 8;

  const int bs = cache.block_size;
  const KeySource src{in.blocks + in.seq_block_offset[seq],
                      bs,
                      (bs & (bs - 1)) == 0 ? __ffs(bs) - 1 : -1,
                      shape.num_kv_heads,
                      kv_head,
                      in.positions[first_row + tile_rows - 1]};
  const int last_pos = src.last_pos;

  if constexpr (HD < 32) {
    // The K rows' padding to 32 dims: zeros, never overwritten (copies fill the first HD bytes).
    uint8_t* k_rows = FP8_CACHE ? stages : smem + S::kK8;
    const int rows = FP8_CACHE ? S::kStages * kKeys : kKeys;
    for (int j = threadIdx.x; j < rows; j += kThreads) {
      const int stage = FP8_CACHE ? j / kKeys : 0;
      uint8_t* row = k_rows + stage * S::kStage + (j % kKeys) * S::kQkStride;
      *reinterpret_cast<uint4*>(row + 16) = make_uint4(0, 0, 0, 0);
    }
  }
  // All stages but one start loading while q is staged.
#pragma unroll
  for (int s = 0; s < S::kStages - 1; ++s) {
    if (s * kKeys <= last_pos) load_chunk<HD, FP8_CACHE>(stages + s * S::kStage, s * kKeys, src, cache);
    cp_async_commit();
  }
  stage_q<HD>(qkv, first_row, tile_rows, kv_head, group, shape.num_heads * HD + 2 * kv_size, q8,
              scale_inv);
  __syncwarp();  // the warp's own slots, written by its own lanes

  // This thread's query slots: rows g and g + 8 (h) of each of the warp's kM tiles (mt); their
  // positions, and the factor from raw scores to base-2 logits.
  const float log2e_rsqrt = 1.4426950408889634f * rsqrtf(static_cast<float>(HD));
  int pos[kM][2];
  float score_scale[kM][2];
  int warp_last = -1, thread_first = INT_MAX;
#pragma unroll
  for (int mt = 0; mt < kM; ++mt) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int slot = warp * 16 * kM + mt * 16 + g + 8 * h;
      const int r = slot / group;
      pos[mt][h] = r < tile_rows ? in.positions[first_row + r] : -1;
      score_scale[mt][h] = scale_inv[slot] * log2e_rsqrt;
      warp_last = max(warp_last, pos[mt][h]);
      thread_first = min(thread_first, pos[mt][h]);
    }
  }
#pragma unroll
  for (int off = 16; off > 0; off /= 2) {
    warp_last = max(warp_last, __shfl_xor_sync(0xffffffffu, warp_last, off));
  }

  float o[kM][kDimTiles][4];
  float m[kM][2], l[kM][2];
#pragma unroll
  for (int mt = 0; mt < kM; ++mt) {
#pragma unroll
    for (int t = 0; t < kDimTiles; ++t) o[mt][t][0] = o[mt][t][1] = o[mt][t][2] = o[mt][t][3] = 0.0f;
    m[mt][0] = m[mt][1] = -INFINITY;
    l[mt][0] = l[mt][1] = 0.0f;
  }
  const uint8_t* q_warp = q8 + (warp * 16 * kM + lane % 16) * S::kQkStride + (lane / 16) * 16;

  int stage = 0;
  for (int base = 0; base <= last_pos; base += kKeys) {
    cp_async_wait<S::kStages - 2>();  // this chunk's group; the later ones may be in flight
    // Every thread's copies of this chunk are visible, and every warp is done with the previous
    // chunk: its stage (refilled next) and the e4m3 K and transposed V (rewritten below).
    __syncthreads();
    const int ahead = base + (S::kStages - 1) * kKeys;
    const int fill = stage == 0 ? S::kStages - 1 : stage - 1;
    if (ahead <= last_pos) load_chunk<HD, FP8_CACHE>(stages + fill * S::kStage, ahead, src, cache);
    cp_async_commit();
    const uint8_t* chunk = stages + stage * S::kStage;
    stage = stage + 1 == S::kStages ? 0 : stage + 1;
    transpose_v<HD, FP8_CACHE>(chunk, vt);
    if constexpr (!FP8_CACHE) quantize_k<HD>(chunk, smem + S::kK8);
    __syncthreads();  // the chunk's e4m3 operands are in place
    if (base > warp_last) continue;  // only masked keys for this warp
    const uint8_t* k_s = FP8_CACHE ? chunk : smem + S::kK8;

    // Scores for 64 keys: 8 tiles of 8 keys, each K fragment used by the warp's kM query tiles.
    float s[kM][kKeys / 8][4];
#pragma unroll
    for (int mt = 0; mt < kM; ++mt) {
#pragma unroll
      for (int t = 0; t < kKeys / 8; ++t) s[mt][t][0] = s[mt][t][1] = s[mt][t][2] = s[mt][t][3] = 0.0f;
    }
    // One k32 step at a time, K fragments by ldmatrix x2: loading two steps at once (x4) costs
    // 10 registers more, and spilled (ptxas, CUDA 13.0).
#pragma unroll
    for (int st = 0; st < kQkSteps; ++st) {
      uint32_t qa[kM][4];
#pragma unroll
      for (int mt = 0; mt < kM; ++mt) ldsm_x4(qa[mt], q_warp + mt * 16 * S::kQkStride + st * 32);
#pragma unroll
      for (int t = 0; t < kKeys / 8; ++t) {
        uint32_t b[2];
        ldsm_x2(b, k_s + (t * 8 + lm_row) * S::kQkStride + st * 32 + (lm_mat % 2) * 16);
#pragma unroll
        for (int mt = 0; mt < kM; ++mt) mma_e4m3(s[mt][t], qa[mt], b[0], b[1]);
      }
    }

    // Causal mask, online softmax in base 2 (the scale applied inside the exponent's FMA; the max
    // of the raw scores times the positive scale is the max of the scaled ones), and P in e4m3.
    const bool masked = base + kKeys - 1 > thread_first;
    uint32_t pa[kM][kKeys / 32][4];
    float alpha[kM][2];
#pragma unroll
    for (int mt = 0; mt < kM; ++mt) {
      float chunk_max[2] = {-INFINITY, -INFINITY};
#pragma unroll
      for (int t = 0; t < kKeys / 8; ++t) {
#pragma unroll
        for (int c = 0; c < 4; ++c) {
          const int h = c / 2;
          if (masked) {
            const int key = base + t * 8 + tig * 2 + (c & 1);
            if (key > pos[mt][h]) s[mt][t][c] = -INFINITY;
          }
          chunk_max[h] = fmaxf(chunk_max[h], s[mt][t][c]);
        }
      }
      float bias[2];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        chunk_max[h] = fmaxf(chunk_max[h], __shfl_xor_sync(0xffffffffu, chunk_max[h], 1));
        chunk_max[h] = fmaxf(chunk_max[h], __shfl_xor_sync(0xffffffffu, chunk_max[h], 2));
        const float m_new = fmaxf(m[mt][h], chunk_max[h] * score_scale[mt][h]);
        const float ref = m_new == -INFINITY ? 0.0f : m_new;  // a row that sees nothing yet
        alpha[mt][h] = exp2f(m[mt][h] - ref);
        m[mt][h] = m_new;
        bias[h] = kPLog2Scale - ref;
      }
#pragma unroll
      for (int t = 0; t < kKeys / 8; ++t) {
#pragma unroll
        for (int c = 0; c < 4; ++c) {
          s[mt][t][c] = exp2f(fmaf(s[mt][t][c], score_scale[mt][c / 2], bias[c / 2]));
        }
      }
      // The accumulators of key tiles 4kk .. 4kk + 3 are this thread's A fragment of k-step kk,
      // in the key order the transposed V follows.
#pragma unroll
      for (int kk = 0; kk < kKeys / 32; ++kk) {
        const float(&s0)[4] = s[mt][4 * kk];
        const float(&s1)[4] = s[mt][4 * kk + 1];
        const float(&s2)[4] = s[mt][4 * kk + 2];
        const float(&s3)[4] = s[mt][4 * kk + 3];
        pa[mt][kk][0] = e4m3x4(s0[0], s0[1], s1[0], s1[1]);
        pa[mt][kk][1] = e4m3x4(s0[2], s0[3], s1[2], s1[3]);
        pa[mt][kk][2] = e4m3x4(s2[0], s2[1], s3[0], s3[1]);
        pa[mt][kk][3] = e4m3x4(s2[2], s2[3], s3[2], s3[3]);
      }
    }

    // O = O * alpha + P . V per dim tile, P . V in fresh accumulators; one ldmatrix gives a dim
    // tile's B fragments for both k-steps. The row sums: P times a column of ones.
    const uint8_t* vrow = vt + lm_row * S::kVtStride + lm_mat * 16;
#pragma unroll
    for (int t = 0; t < kDimTiles; ++t) {
      uint32_t b[4];
      ldsm_x4(b, vrow + t * 8 * S::kVtStride);
#pragma unroll
      for (int mt = 0; mt < kM; ++mt) {
        float c[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        mma_e4m3(c, pa[mt][0], b[0], b[1]);
        mma_e4m3(c, pa[mt][1], b[2], b[3]);
        o[mt][t][0] = fmaf(o[mt][t][0], alpha[mt][0], c[0]);
        o[mt][t][1] = fmaf(o[mt][t][1], alpha[mt][0], c[1]);
        o[mt][t][2] = fmaf(o[mt][t][2], alpha[mt][1], c[2]);
        o[mt][t][3] = fmaf(o[mt][t][3], alpha[mt][1], c[3]);
      }
    }
#pragma unroll
    for (int mt = 0; mt < kM; ++mt) {
      float c[4] = {0.0f, 0.0f, 0.0f, 0.0f};
      mma_e4m3(c, pa[mt][0], kOnes, kOnes);
      mma_e4m3(c, pa[mt][1], kOnes, kOnes);
      l[mt][0] = fmaf(l[mt][0], alpha[mt][0], c[0]);
      l[mt][1] = fmaf(l[mt][1], alpha[mt][1], c[2]);
    }
  }

  // l is already the whole row's sum (the MMA summed over every key of the row).
#pragma unroll
  for (int mt = 0; mt < kM; ++mt) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int slot = warp * 16 * kM + mt * 16 + g + 8 * h;
      const int r = slot / group;
      if (r >= tile_rows) continue;
      const int head = kv_head * group + slot % group;
      const float inv = l[mt][h] > 0.0f ? 1.0f / l[mt][h] : 0.0f;
      bf16* dst = out + static_cast<int64_t>(first_row + r) * q_size + head * HD + tig * 2;
#pragma unroll
      for (int t = 0; t < kDimTiles; ++t) {
        *reinterpret_cast<__nv_bfloat162*>(dst + t * 8) =
            __floats2bfloat162_rn(o[mt][t][2 * h] * inv, o[mt][t][2 * h + 1] * inv);
      }
    }
  }
}

template <int HD, bool FP8_CACHE>
cudaError_t launch(const float* qkv, const int32_t* tiles, int num_tiles, AttentionShape shape,
                   RowInputs in, LayerCache cache, bf16* out, cudaStream_t stream) {
  constexpr size_t kBytes = Smem<HD, FP8_CACHE>::bytes();
  static const cudaError_t attribute =
      cudaFuncSetAttribute(attention_prefill_fp8_kernel<HD, FP8_CACHE>,
                           cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(kBytes));
  if (attribute != cudaSuccess) return attribute;
  dim3 grid(num_tiles, shape.num_kv_heads);
  attention_prefill_fp8_kernel<HD, FP8_CACHE><<<grid, kThreads, kBytes, stream>>>(
      qkv, tiles, shape, in, cache, out);
  return cudaGetLastError();
}

template <bool FP8_CACHE>
cudaError_t launch_for_dim(const float* qkv, const int32_t* tiles, int num_tiles,
                           AttentionShape shape, RowInputs in, LayerCache cache, bf16* out,
                           cudaStream_t stream) {
  switch (shape.head_dim) {
    case 16: return launch<16, FP8_CACHE>(qkv, tiles, num_tiles, shape, in, cache, out, stream);
    case 32: return launch<32, FP8_CACHE>(qkv, tiles, num_tiles, shape, in, cache, out, stream);
    case 64: return launch<64, FP8_CACHE>(qkv, tiles, num_tiles, shape, in, cache, out, stream);
    default: return launch<128, FP8_CACHE>(qkv, tiles, num_tiles, shape, in, cache, out, stream);
  }
}

}  // namespace

// The mma.sync kernel's tiling (128 query slots a block), so its shapes and tile rows.
static_assert(kSlots == 128, "the tiling of attention_prefill_mma.cu");
bool prefill_fp8_supported(AttentionShape shape) { return prefill_mma_supported(shape); }

int prefill_fp8_tile_rows(AttentionShape shape) { return prefill_mma_tile_rows(shape); }

cudaError_t launch_attention_prefill_fp8(const float* qkv, const int32_t* tiles, int num_tiles,
                                         AttentionShape shape, RowInputs in, LayerCache cache,
                                         bf16* out, cudaStream_t stream) {
  if (!prefill_fp8_supported(shape)) return cudaErrorInvalidValue;
  if (num_tiles <= 0) return cudaGetLastError();
  if (cache.fp8()) return launch_for_dim<true>(qkv, tiles, num_tiles, shape, in, cache, out, stream);
  return launch_for_dim<false>(qkv, tiles, num_tiles, shape, in, cache, out, stream);
}

}  // namespace paceline::cuda
