// Prefill attention on the tensor cores (mma.sync m16n8k16, bf16 in, float32 accumulation),
// flash-attention style: a block of 4 warps takes a tile of consecutive rows of one sequence and
// one KV head; its 128 query slots are (row, head of the group) pairs, 32 per warp in two m16
// tiles, so GQA heads share every K/V chunk and each K/V fragment feeds two MMAs. q waits in
// shared memory (bf16, pre-scaled) and is read with ldmatrix like K; V is transposed by
// ldmatrix. Keys stream through shared memory 64 at a time from the paged cache, double
// buffered: after the chunk's barrier, cp.async fills the other buffer while the warps compute
// (an FP8 cache is widened to bf16 on its way in instead). Two blocks fit an SM. The softmax
// runs online in base 2 with the scale folded into q. Causal and varlen: a query sees the keys
// at positions <= its own (the cached prefix and the rows before it). A query's result depends
// only on its own keys: the chunks start at key 0 whatever the tile, so the tiling is free to
// change without changing any bits.
#include <climits>
#include <cstdint>

#include "exec/cuda/attention_prefill_mma.cuh"
#include "exec/cuda/device_utils.cuh"
#include "exec/cuda/kv_fp8.cuh"

namespace paceline::cuda {
namespace {

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kTilesPerWarp = 2;                    // m16 tiles of query slots per warp
constexpr int kSlots = 16 * kTilesPerWarp * kWarps;  // query slots per block
constexpr int kKeys = 64;                           // keys per chunk
constexpr int kStages = 2;  // chunks in shared memory: one computed, one in flight

template <int HD>
struct Smem {
  static constexpr int kStride = HD + 8;  // bf16 per shared row: conflict-free ldmatrix rows
  static constexpr int kChunk = kKeys * kStride;
  // q of the block's slots, then K and V chunks.
  static constexpr size_t bytes() { return sizeof(bf16) * (kSlots * kStride + 2 * kStages * kChunk); }
};

__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&h);
}

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

__device__ __forceinline__ void ldsm_x4(uint32_t (&r)[4], const bf16* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p))
               : "memory");
}
__device__ __forceinline__ void ldsm_x2(uint32_t (&r)[2], const bf16* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(smem_addr(p))
               : "memory");
}
__device__ __forceinline__ void ldsm_x4_trans(uint32_t (&r)[4], const bf16* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p))
               : "memory");
}

__device__ __forceinline__ void mma_bf16(float (&c)[4], const uint32_t (&a)[4], uint32_t b0,
                                         uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// load_chunk for a bf16 cache: asynchronous copies, committed as one group.
template <int HD>
__device__ __forceinline__ void load_chunk_bf16(bf16* k_s, bf16* v_s, int base, int last_pos,
                                                const int32_t* blocks, const LayerCache& cache,
                                                int kv_heads, int kv_head) {
  constexpr int kStride = Smem<HD>::kStride;
  constexpr int kVecPerRow = HD / 8;  // 8 elements (16 bytes of bf16) per vector
  const int bs = cache.block_size;
  // Block sizes are powers of two in practice (16): a shift and a mask instead of a division.
  const bool pow2 = (bs & (bs - 1)) == 0;
  const int shift = __ffs(bs) - 1;
  for (int i = threadIdx.x; i < kKeys * kVecPerRow; i += kThreads) {
    const int j = i / kVecPerRow;
    const int d = (i % kVecPerRow) * 8;
    const int key = base + j;
    bf16* kd = k_s + j * kStride + d;
    bf16* vd = v_s + j * kStride + d;
    if (key > last_pos) {
      *reinterpret_cast<uint4*>(kd) = make_uint4(0, 0, 0, 0);
      *reinterpret_cast<uint4*>(vd) = make_uint4(0, 0, 0, 0);
      continue;
    }
    const int block = pow2 ? key >> shift : key / bs;
    const int offset = pow2 ? key & (bs - 1) : key % bs;
    const int64_t at = kv_row(blocks[block], offset, kv_head, kv_heads, bs) * HD + d;
    cp_async16(kd, cache.k + at);
    cp_async16(vd, cache.v + at);
  }
  cp_async_commit();
}

// load_chunk for an FP8 cache: eight e4m3 bytes per vector, widened to the same eight bf16 and
// stored, the same values in the same places as the bf16 path. A thread's vectors go in batches
// of up to four: every load of a batch (the block-table entries, then the K and V bytes) is
// issued before its first store, so a batch costs two round trips to memory where one vector at
// a time cost two per vector (the compiler keeps a global load behind an earlier store to shared
// memory, since the generic pointers might alias). The batches stay a loop: unrolled, the
// head_dim-128 kernel spilled 228 bytes (ptxas, CUDA 13.0) against 80 before; as a loop of
// batches of four, 100 (batches of two: 44, with twice the round trips).
template <int HD>
__device__ __forceinline__ void load_chunk_fp8(bf16* k_s, bf16* v_s, int base, int last_pos,
                                               const int32_t* blocks, const LayerCache& cache,
                                               int kv_heads, int kv_head) {
  constexpr int kStride = Smem<HD>::kStride;
  constexpr int kVecPerRow = HD / 8;
  constexpr int kPer = kKeys * kVecPerRow / kThreads;
  static_assert(kKeys * kVecPerRow % kThreads == 0, "vectors per thread");
  constexpr int kBatch = kPer < 4 ? kPer : 4;
  static_assert(kPer % kBatch == 0, "batches per thread");
  const int bs = cache.block_size;
  const bool pow2 = (bs & (bs - 1)) == 0;  // as in load_chunk_bf16
  const int shift = __ffs(bs) - 1;
#pragma unroll 1
  for (int b0 = 0; b0 < kPer; b0 += kBatch) {
    uint2 kr[kBatch], vr[kBatch];
#pragma unroll
    for (int n = 0; n < kBatch; ++n) {
      const int i = threadIdx.x + (b0 + n) * kThreads;
      const int key = base + i / kVecPerRow;
      kr[n] = vr[n] = make_uint2(0, 0);  // e4m3 zeros widen to bf16 +0: the bf16 path's zeros
      if (key <= last_pos) {
        const int block = pow2 ? key >> shift : key / bs;
        const int offset = pow2 ? key & (bs - 1) : key % bs;
        const int64_t at =
            kv_row(blocks[block], offset, kv_head, kv_heads, bs) * HD + (i % kVecPerRow) * 8;
        kr[n] = *reinterpret_cast<const uint2*>(cache.k8 + at);
        vr[n] = *reinterpret_cast<const uint2*>(cache.v8 + at);
      }
    }
#pragma unroll
    for (int n = 0; n < kBatch; ++n) {
      const int i = threadIdx.x + (b0 + n) * kThreads;
      const int at = (i / kVecPerRow) * kStride + (i % kVecPerRow) * 8;
      *reinterpret_cast<uint4*>(k_s + at) = fp8x8_to_bf16x8(kr[n]);
      *reinterpret_cast<uint4*>(v_s + at) = fp8x8_to_bf16x8(vr[n]);
    }
  }
}

// Fills one chunk buffer with keys [base, base + 64) of the tile's KV head (zeros past last_pos,
// so that masked keys multiply finite values).
template <int HD, bool FP8>
__device__ __forceinline__ void load_chunk(bf16* k_s, bf16* v_s, int base, int last_pos,
                                           const int32_t* blocks, const LayerCache& cache,
                                           int kv_heads, int kv_head) {
  if constexpr (FP8) {
    load_chunk_fp8<HD>(k_s, v_s, base, last_pos, blocks, cache, kv_heads, kv_head);
  } else {
    load_chunk_bf16<HD>(k_s, v_s, base, last_pos, blocks, cache, kv_heads, kv_head);
  }
}

template <int HD, bool FP8>
__global__ void __launch_bounds__(kThreads, 2)
    attention_prefill_mma_kernel(const float* qkv, const int32_t* tiles, AttentionShape shape,
                                 RowInputs in, LayerCache cache, bf16* out) {
  allow_dependent_launch();  // o_proj may fetch its weights meanwhile
  constexpr int kStride = Smem<HD>::kStride;
  constexpr int kChunk = Smem<HD>::kChunk;
  constexpr int kSteps = HD / 16;  // k-steps of q . k
  constexpr int kDimTiles = HD / 8;
  constexpr int kM = kTilesPerWarp;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  bf16* const q_s = reinterpret_cast<bf16*>(smem_raw);      // [kSlots][kStride], pre-scaled
  bf16* const k_base = q_s + kSlots * kStride;               // [kStages][kKeys][kStride]
  bf16* const v_base = k_base + kStages * kChunk;

  // Tiles in reverse: the last rows of a sequence see the most keys, and starting them first
  // keeps the short ones for the end of the grid, where they fill the gaps.
  const int tile = gridDim.x - 1 - blockIdx.x;
  const int seq = tiles[tile * 3];
  const int first_row = tiles[tile * 3 + 1];
  const int tile_rows = tiles[tile * 3 + 2];
  const int kv_head = blockIdx.y;
  const int group = shape.num_heads / shape.num_kv_heads;
  const int q_size = shape.num_heads * HD;
  const int kv_size = shape.num_kv_heads * HD;
  const int qkv_width = q_size + 2 * kv_size;
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  const int g = lane / 4;    // fragment row group
  const int tig = lane % 4;  // thread in group
  // ldmatrix: lanes 8i..8i+7 address the rows of matrix i.
  const int lm_mat = lane / 8;
  const int lm_row = lane % 8;

  const int last_pos = in.positions[first_row + tile_rows - 1];
  const int32_t* blocks = in.blocks + in.seq_block_offset[seq];
  // The first chunk is on its way while q is staged.
  load_chunk<HD, FP8>(k_base, v_base, 0, last_pos, blocks, cache, shape.num_kv_heads, kv_head);

  // q of every slot (row, head of the group) in shared memory as bf16, pre-scaled by
  // log2(e) / sqrt(head_dim); slots past the tile's rows are zeros.
  const float scale = 1.4426950408889634f * rsqrtf(static_cast<float>(HD));
  for (int i = threadIdx.x; i < kSlots * HD / 2; i += kThreads) {
    const int slot = i / (HD / 2);
    const int d = (i % (HD / 2)) * 2;
    const int r = slot / group;
    float2 q = make_float2(0.0f, 0.0f);
    if (r < tile_rows) {
      const int head = kv_head * group + slot % group;
      q = *reinterpret_cast<const float2*>(qkv + static_cast<int64_t>(first_row + r) * qkv_width +
                                           head * HD + d);
    }
    *reinterpret_cast<uint32_t*>(q_s + slot * kStride + d) = pack_bf16(q.x * scale, q.y * scale);
  }

  // This thread's query slots: rows g and g + 8 (h) of each of the warp's kM tiles of 16 (mt).
  int pos[kM][2];
  int warp_last = -1, thread_first = INT_MAX;
#pragma unroll
  for (int mt = 0; mt < kM; ++mt) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = (warp * 16 * kM + mt * 16 + g + 8 * h) / group;
      pos[mt][h] = r < tile_rows ? in.positions[first_row + r] : -1;
      warp_last = max(warp_last, pos[mt][h]);
      thread_first = min(thread_first, pos[mt][h]);
    }
  }
  // The warp's last query position: chunks past it hold only masked keys for this warp.
#pragma unroll
  for (int off = 16; off > 0; off /= 2) warp_last = max(warp_last, __shfl_xor_sync(0xffffffffu, warp_last, off));

  float o[kM][kDimTiles][4];
  float m[kM][2], l[kM][2];
#pragma unroll
  for (int mt = 0; mt < kM; ++mt) {
#pragma unroll
    for (int t = 0; t < kDimTiles; ++t) o[mt][t][0] = o[mt][t][1] = o[mt][t][2] = o[mt][t][3] = 0.0f;
    m[mt][0] = m[mt][1] = -INFINITY;
    l[mt][0] = l[mt][1] = 0.0f;
  }
  const bf16* q_warp = q_s + (warp * 16 * kM + lane % 16) * kStride + (lane / 16) * 8;

  int stage = 0;
  for (int base = 0; base <= last_pos; base += kKeys, stage ^= 1) {
    if constexpr (!FP8) cp_async_wait<0>();  // this chunk (the only group in flight)
    // Every warp's copies of this chunk (and q) are visible, and every warp is done with the
    // chunk before it, whose buffer the next copies overwrite.
    __syncthreads();
    if (base + kKeys <= last_pos) {
      load_chunk<HD, FP8>(k_base + (stage ^ 1) * kChunk, v_base + (stage ^ 1) * kChunk,
                          base + kKeys, last_pos, blocks, cache, shape.num_kv_heads, kv_head);
    }
    if (base > warp_last) continue;
    const bf16* k_s = k_base + stage * kChunk;
    const bf16* v_s = v_base + stage * kChunk;

    // Scores for 64 keys: 8 tiles of 8 keys, each K fragment used by the warp's kM query tiles.
    float s[kM][kKeys / 8][4];
#pragma unroll
    for (int mt = 0; mt < kM; ++mt) {
#pragma unroll
      for (int t = 0; t < kKeys / 8; ++t) s[mt][t][0] = s[mt][t][1] = s[mt][t][2] = s[mt][t][3] = 0.0f;
    }
#pragma unroll
    for (int st = 0; st < kSteps; st += 2) {
      constexpr int kPair = kSteps >= 2 ? 2 : 1;
      uint32_t qa[kM][kPair][4];
#pragma unroll
      for (int mt = 0; mt < kM; ++mt) {
#pragma unroll
        for (int so = 0; so < kPair; ++so) ldsm_x4(qa[mt][so], q_warp + mt * 16 * kStride + (st + so) * 16);
      }
#pragma unroll
      for (int t = 0; t < kKeys / 8; ++t) {
        const bf16* krow = k_s + (t * 8 + lm_row) * kStride + st * 16;
        if constexpr (kPair == 2) {
          uint32_t b[4];
          ldsm_x4(b, krow + lm_mat * 8);
#pragma unroll
          for (int mt = 0; mt < kM; ++mt) {
            mma_bf16(s[mt][t], qa[mt][0], b[0], b[1]);
            mma_bf16(s[mt][t], qa[mt][1], b[2], b[3]);
          }
        } else {
          uint32_t b[2];
          ldsm_x2(b, krow + (lm_mat % 2) * 8);
#pragma unroll
          for (int mt = 0; mt < kM; ++mt) mma_bf16(s[mt][t], qa[mt][0], b[0], b[1]);
        }
      }
    }
    // Causal mask (only where the chunk reaches past one of the thread's queries), then the
    // online softmax per query row.
    const bool masked = base + kKeys - 1 > thread_first;
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
      float alpha[2], ref[2];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        chunk_max[h] = fmaxf(chunk_max[h], __shfl_xor_sync(0xffffffffu, chunk_max[h], 1));
        chunk_max[h] = fmaxf(chunk_max[h], __shfl_xor_sync(0xffffffffu, chunk_max[h], 2));
        const float m_new = fmaxf(m[mt][h], chunk_max[h]);
        ref[h] = m_new == -INFINITY ? 0.0f : m_new;  // a row that sees nothing yet stays at zero
        alpha[h] = exp2f(m[mt][h] - ref[h]);
        m[mt][h] = m_new;
        l[mt][h] *= alpha[h];
      }
#pragma unroll
      for (int t = 0; t < kDimTiles; ++t) {
        o[mt][t][0] *= alpha[0];
        o[mt][t][1] *= alpha[0];
        o[mt][t][2] *= alpha[1];
        o[mt][t][3] *= alpha[1];
      }
#pragma unroll
      for (int t = 0; t < kKeys / 8; ++t) {
#pragma unroll
        for (int c = 0; c < 4; ++c) {
          s[mt][t][c] = exp2f(s[mt][t][c] - ref[c / 2]);
          l[mt][c / 2] += s[mt][t][c];
        }
      }
    }
    // o += p . v, 16 keys per k-step; p's C fragments are the A fragments of the next mma,
    // and one transposing ldmatrix gives the B fragments of two dimension tiles for kM tiles.
#pragma unroll
    for (int kk = 0; kk < kKeys / 16; ++kk) {
      uint32_t pa[kM][4];
#pragma unroll
      for (int mt = 0; mt < kM; ++mt) {
        pa[mt][0] = pack_bf16(s[mt][2 * kk][0], s[mt][2 * kk][1]);
        pa[mt][1] = pack_bf16(s[mt][2 * kk][2], s[mt][2 * kk][3]);
        pa[mt][2] = pack_bf16(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
        pa[mt][3] = pack_bf16(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
      }
      const bf16* vrow = v_s + (kk * 16 + (lm_mat % 2) * 8 + lm_row) * kStride + (lm_mat / 2) * 8;
#pragma unroll
      for (int t = 0; t < kDimTiles; t += 2) {
        uint32_t b[4];
        ldsm_x4_trans(b, vrow + t * 8);
#pragma unroll
        for (int mt = 0; mt < kM; ++mt) {
          mma_bf16(o[mt][t], pa[mt], b[0], b[1]);
          mma_bf16(o[mt][t + 1], pa[mt], b[2], b[3]);
        }
      }
    }
  }

#pragma unroll
  for (int mt = 0; mt < kM; ++mt) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float sum = l[mt][h];
      sum += __shfl_xor_sync(0xffffffffu, sum, 1);
      sum += __shfl_xor_sync(0xffffffffu, sum, 2);
      const int slot = warp * 16 * kM + mt * 16 + g + 8 * h;
      const int r = slot / group;
      if (r >= tile_rows) continue;
      const int head = kv_head * group + slot % group;
      const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
      bf16* dst = out + static_cast<int64_t>(first_row + r) * q_size + head * HD + tig * 2;
#pragma unroll
      for (int t = 0; t < kDimTiles; ++t) {
        *reinterpret_cast<__nv_bfloat162*>(dst + t * 8) =
            __floats2bfloat162_rn(o[mt][t][2 * h] * inv, o[mt][t][2 * h + 1] * inv);
      }
    }
  }
}

template <int HD, bool FP8>
cudaError_t launch(const float* qkv, const int32_t* tiles, int num_tiles, AttentionShape shape,
                   RowInputs in, LayerCache cache, bf16* out, cudaStream_t stream) {
  static const cudaError_t attribute = cudaFuncSetAttribute(
      attention_prefill_mma_kernel<HD, FP8>, cudaFuncAttributeMaxDynamicSharedMemorySize,
      static_cast<int>(Smem<HD>::bytes()));
  if (attribute != cudaSuccess) return attribute;
  dim3 grid(num_tiles, shape.num_kv_heads);
  attention_prefill_mma_kernel<HD, FP8><<<grid, kThreads, Smem<HD>::bytes(), stream>>>(
      qkv, tiles, shape, in, cache, out);
  return cudaGetLastError();
}

template <bool FP8>
cudaError_t launch_for_dim(const float* qkv, const int32_t* tiles, int num_tiles,
                           AttentionShape shape, RowInputs in, LayerCache cache, bf16* out,
                           cudaStream_t stream) {
  switch (shape.head_dim) {
    case 16: return launch<16, FP8>(qkv, tiles, num_tiles, shape, in, cache, out, stream);
    case 32: return launch<32, FP8>(qkv, tiles, num_tiles, shape, in, cache, out, stream);
    case 64: return launch<64, FP8>(qkv, tiles, num_tiles, shape, in, cache, out, stream);
    default: return launch<128, FP8>(qkv, tiles, num_tiles, shape, in, cache, out, stream);
  }
}

}  // namespace

bool prefill_mma_supported(AttentionShape shape) {
  if (shape.num_kv_heads <= 0 || shape.num_heads % shape.num_kv_heads != 0) return false;
  const int group = shape.num_heads / shape.num_kv_heads;
  const int hd = shape.head_dim;
  return kSlots % group == 0 && (hd == 16 || hd == 32 || hd == 64 || hd == 128);
}

int prefill_mma_tile_rows(AttentionShape shape) {
  return kSlots / (shape.num_heads / shape.num_kv_heads);
}

cudaError_t launch_attention_prefill_mma(const float* qkv, const int32_t* tiles, int num_tiles,
                                         AttentionShape shape, RowInputs in, LayerCache cache,
                                         bf16* out, cudaStream_t stream) {
  if (!prefill_mma_supported(shape)) return cudaErrorInvalidValue;
  if (num_tiles <= 0) return cudaGetLastError();
  // The cache's element type is a template argument: the bf16 kernel carries no FP8 branch.
  if (cache.fp8()) return launch_for_dim<true>(qkv, tiles, num_tiles, shape, in, cache, out, stream);
  return launch_for_dim<false>(qkv, tiles, num_tiles, shape, in, cache, out, stream);
}

}  // namespace paceline::cuda
