// Prefill attention on the tensor cores (mma.sync m16n8k16, bf16 in, float32 accumulation),
// flash-attention style: a block takes a tile of consecutive rows of one sequence and one KV
// head; its 128 query slots are (row, head of the group) pairs, 16 per warp, so GQA heads share
// every K/V chunk. Keys stream through shared memory 64 at a time from the paged cache, three
// chunks in shared memory (cp.async fills the next two while the warps compute on one, so one
// barrier per chunk suffices; an FP8 cache is widened to bf16 on its way in instead). K and V fragments come from shared memory with
// ldmatrix (V transposed by it). The softmax runs online in base 2 with the scale folded into q.
// Causal and varlen: a query sees the keys at positions <= its own (the cached prefix and the
// rows before it). A query's result depends only on its own keys: the chunks start at key 0
// whatever the tile, so the tiling is free to change without changing any bits.
#include <cstdint>

#include "exec/cuda/attention_prefill_mma.cuh"
#include "exec/cuda/kv_fp8.cuh"

namespace paceline::cuda {
namespace {

constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
constexpr int kSlots = 16 * kWarps;  // query slots per block
constexpr int kKeys = 64;            // keys per chunk
constexpr int kStages = 3;  // chunks in shared memory: one computed, two in flight

template <int HD>
struct Smem {
  static constexpr int kStride = HD + 8;  // bf16 per shared row: conflict-free ldmatrix rows
  static constexpr int kChunk = kKeys * kStride;
  static constexpr size_t bytes() { return sizeof(bf16) * 2 * kStages * kChunk; }
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

// Fills one chunk buffer with keys [base, base + 64) of the tile's KV head (zeros past last_pos,
// so that masked keys multiply finite values). bf16: asynchronous copies, committed as one
// group; FP8: eight bytes at a time, widened to bf16 and stored.
template <int HD, bool FP8>
__device__ __forceinline__ void load_chunk(bf16* k_s, bf16* v_s, int base, int last_pos,
                                           const int32_t* blocks, const LayerCache& cache,
                                           int kv_size, int kv_head) {
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
    const int64_t slot = static_cast<int64_t>(blocks[block]) * bs + offset;
    const int64_t at = slot * kv_size + kv_head * HD + d;
    if constexpr (FP8) {  // eight e4m3 bytes widened to the same eight bf16
      *reinterpret_cast<uint4*>(kd) = fp8x8_to_bf16x8(*reinterpret_cast<const uint2*>(cache.k8 + at));
      *reinterpret_cast<uint4*>(vd) = fp8x8_to_bf16x8(*reinterpret_cast<const uint2*>(cache.v8 + at));
    } else {
      cp_async16(kd, cache.k + at);
      cp_async16(vd, cache.v + at);
    }
  }
  if constexpr (!FP8) cp_async_commit();
}

template <int HD, bool FP8>
__global__ void __launch_bounds__(kThreads)
    attention_prefill_mma_kernel(const float* qkv, const int32_t* tiles, AttentionShape shape,
                                 RowInputs in, LayerCache cache, bf16* out) {
  constexpr int kStride = Smem<HD>::kStride;
  constexpr int kChunk = Smem<HD>::kChunk;
  constexpr int kSteps = HD / 16;  // k-steps of q . k
  constexpr int kDimTiles = HD / 8;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  bf16* const k_base = reinterpret_cast<bf16*>(smem_raw);  // [kStages][kKeys][kStride]
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

  // This thread's two query slots: rows g and g + 8 of the warp's 16.
  int pos[2];
  const float* qrow[2];
  int out_row[2], out_head[2];
  for (int h = 0; h < 2; ++h) {
    const int slot = warp * 16 + g + 8 * h;
    const int r = slot / group;
    const int head = kv_head * group + slot % group;
    const bool live = r < tile_rows;
    pos[h] = live ? in.positions[first_row + r] : -1;
    qrow[h] = qkv + static_cast<int64_t>(first_row + (live ? r : 0)) * qkv_width + head * HD;
    out_row[h] = live ? first_row + r : -1;
    out_head[h] = head;
  }
  const int last_pos = in.positions[first_row + tile_rows - 1];
  const int32_t* blocks = in.blocks + in.seq_block_offset[seq];
  // The first two chunks are on their way while q is read (a group is committed for each, empty
  // when the chunk lies past the tile, so that the waits below count the same way).
  load_chunk<HD, FP8>(k_base, v_base, 0, last_pos, blocks, cache, kv_size, kv_head);
  if (kKeys <= last_pos) {
    load_chunk<HD, FP8>(k_base + kChunk, v_base + kChunk, kKeys, last_pos, blocks, cache, kv_size,
                        kv_head);
  } else if constexpr (!FP8) {
    cp_async_commit();
  }

  // q in bf16 A fragments, pre-scaled by log2(e) / sqrt(head_dim).
  const float scale = 1.4426950408889634f * rsqrtf(static_cast<float>(HD));
  uint32_t qa[kSteps][4];
#pragma unroll
  for (int s = 0; s < kSteps; ++s) {
    const int d = s * 16 + tig * 2;
    qa[s][0] = pack_bf16(qrow[0][d] * scale, qrow[0][d + 1] * scale);
    qa[s][1] = pack_bf16(qrow[1][d] * scale, qrow[1][d + 1] * scale);
    qa[s][2] = pack_bf16(qrow[0][d + 8] * scale, qrow[0][d + 9] * scale);
    qa[s][3] = pack_bf16(qrow[1][d + 8] * scale, qrow[1][d + 9] * scale);
  }
  // The warp's last query position: chunks past it hold only masked keys for this warp.
  int warp_last = max(pos[0], pos[1]);
#pragma unroll
  for (int off = 16; off > 0; off /= 2) warp_last = max(warp_last, __shfl_xor_sync(0xffffffffu, warp_last, off));

  float o[kDimTiles][4];
#pragma unroll
  for (int t = 0; t < kDimTiles; ++t) o[t][0] = o[t][1] = o[t][2] = o[t][3] = 0.0f;
  float m[2] = {-INFINITY, -INFINITY};
  float l[2] = {0.0f, 0.0f};

  int stage = 0;
  for (int base = 0; base <= last_pos; base += kKeys, stage = stage == kStages - 1 ? 0 : stage + 1) {
    if constexpr (!FP8) cp_async_wait<1>();  // this chunk's group is done (the next may not be)
    // Every warp's copies of this chunk are visible, and every warp is done with the chunk
    // before it, whose buffer the copies issued next overwrite.
    __syncthreads();
    {
      const int ahead = base + 2 * kKeys;
      const int at = stage == 0 ? kStages - 1 : stage - 1;  // (stage + 2) % 3
      if (ahead <= last_pos) {
        load_chunk<HD, FP8>(k_base + at * kChunk, v_base + at * kChunk, ahead, last_pos, blocks,
                            cache, kv_size, kv_head);
      } else if constexpr (!FP8) {
        cp_async_commit();  // an empty group keeps one group per chunk
      }
    }

    if (base <= warp_last) {
      const bf16* k_s = k_base + stage * kChunk;
      const bf16* v_s = v_base + stage * kChunk;
      // Scores for 64 keys: 8 tiles of 8 keys; ldmatrix gives two k-steps' B fragments at once.
      float s[kKeys / 8][4];
#pragma unroll
      for (int t = 0; t < kKeys / 8; ++t) {
        s[t][0] = s[t][1] = s[t][2] = s[t][3] = 0.0f;
        const bf16* krow = k_s + (t * 8 + lm_row) * kStride;
#pragma unroll
        for (int st = 0; st + 1 < kSteps; st += 2) {
          uint32_t b[4];
          ldsm_x4(b, krow + st * 16 + lm_mat * 8);
          mma_bf16(s[t], qa[st], b[0], b[1]);
          mma_bf16(s[t], qa[st + 1], b[2], b[3]);
        }
        if constexpr (kSteps % 2 == 1) {
          uint32_t b[2];
          ldsm_x2(b, krow + (kSteps - 1) * 16 + (lm_mat % 2) * 8);
          mma_bf16(s[t], qa[kSteps - 1], b[0], b[1]);
        }
      }
      // Causal mask (only chunks that reach past a query), then the online softmax per query
      // row (h: rows g and g + 8).
      float chunk_max[2] = {-INFINITY, -INFINITY};
      const bool masked = base + kKeys - 1 > min(pos[0], pos[1]);
#pragma unroll
      for (int t = 0; t < kKeys / 8; ++t) {
#pragma unroll
        for (int c = 0; c < 4; ++c) {
          const int h = c / 2;
          if (masked) {
            const int key = base + t * 8 + tig * 2 + (c & 1);
            if (key > pos[h]) s[t][c] = -INFINITY;
          }
          chunk_max[h] = fmaxf(chunk_max[h], s[t][c]);
        }
      }
      float alpha[2], ref[2];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        chunk_max[h] = fmaxf(chunk_max[h], __shfl_xor_sync(0xffffffffu, chunk_max[h], 1));
        chunk_max[h] = fmaxf(chunk_max[h], __shfl_xor_sync(0xffffffffu, chunk_max[h], 2));
        const float m_new = fmaxf(m[h], chunk_max[h]);
        ref[h] = m_new == -INFINITY ? 0.0f : m_new;  // a row that sees nothing yet stays at zero
        alpha[h] = exp2f(m[h] - ref[h]);
        m[h] = m_new;
        l[h] *= alpha[h];
      }
#pragma unroll
      for (int t = 0; t < kDimTiles; ++t) {
        o[t][0] *= alpha[0];
        o[t][1] *= alpha[0];
        o[t][2] *= alpha[1];
        o[t][3] *= alpha[1];
      }
#pragma unroll
      for (int t = 0; t < kKeys / 8; ++t) {
#pragma unroll
        for (int c = 0; c < 4; ++c) {
          s[t][c] = exp2f(s[t][c] - ref[c / 2]);
          l[c / 2] += s[t][c];
        }
      }
      // o += p . v, 16 keys per k-step; p's C fragments are the A fragments of the next mma,
      // and one transposing ldmatrix gives the B fragments of two dimension tiles.
#pragma unroll
      for (int kk = 0; kk < kKeys / 16; ++kk) {
        uint32_t pa[4];
        pa[0] = pack_bf16(s[2 * kk][0], s[2 * kk][1]);
        pa[1] = pack_bf16(s[2 * kk][2], s[2 * kk][3]);
        pa[2] = pack_bf16(s[2 * kk + 1][0], s[2 * kk + 1][1]);
        pa[3] = pack_bf16(s[2 * kk + 1][2], s[2 * kk + 1][3]);
        const bf16* vrow = v_s + (kk * 16 + (lm_mat % 2) * 8 + lm_row) * kStride + (lm_mat / 2) * 8;
#pragma unroll
        for (int t = 0; t < kDimTiles; t += 2) {
          uint32_t b[4];
          ldsm_x4_trans(b, vrow + t * 8);
          mma_bf16(o[t], pa, b[0], b[1]);
          mma_bf16(o[t + 1], pa, b[2], b[3]);
        }
      }
    }
  }

#pragma unroll
  for (int h = 0; h < 2; ++h) {
    l[h] += __shfl_xor_sync(0xffffffffu, l[h], 1);
    l[h] += __shfl_xor_sync(0xffffffffu, l[h], 2);
  }
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    if (out_row[h] < 0) continue;
    const float inv = l[h] > 0.0f ? 1.0f / l[h] : 0.0f;
    bf16* dst = out + static_cast<int64_t>(out_row[h]) * q_size + out_head[h] * HD + tig * 2;
#pragma unroll
    for (int t = 0; t < kDimTiles; ++t) {
      *reinterpret_cast<__nv_bfloat162*>(dst + t * 8) =
          __floats2bfloat162_rn(o[t][2 * h] * inv, o[t][2 * h + 1] * inv);
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
