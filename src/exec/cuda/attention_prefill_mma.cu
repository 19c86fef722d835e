// Prefill attention on the tensor cores (mma.sync m16n8k16, bf16 in, float32 accumulation),
// flash-attention style: a block takes a tile of consecutive rows of one sequence and one KV
// head; its 64 query slots are (row, head of the group) pairs, 16 per warp, so GQA heads share
// every K/V chunk. Keys stream through shared memory 64 at a time from the paged cache; the
// softmax runs online in base 2 with the scale folded into q. Causal and varlen: a query sees
// the keys at positions <= its own (the cached prefix and the rows before it).
#include <cstdint>

#include "exec/cuda/attention_prefill_mma.cuh"
#include "exec/cuda/kv_fp8.cuh"

namespace paceline::cuda {
namespace {

constexpr int kWarps = 4;
constexpr int kSlots = 16 * kWarps;  // query slots per block
constexpr int kKeys = 64;            // keys per chunk

__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&h);
}

__device__ __forceinline__ uint32_t pack_bf16(bf16 lo, bf16 hi) {
  __nv_bfloat162 h;
  h.x = lo;
  h.y = hi;
  return *reinterpret_cast<uint32_t*>(&h);
}

__device__ __forceinline__ void mma_bf16(float (&c)[4], const uint32_t (&a)[4], uint32_t b0,
                                         uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

template <int HD>
__global__ void __launch_bounds__(kWarps * 32)
    attention_prefill_mma_kernel(const float* qkv, const int32_t* tiles, AttentionShape shape,
                                 RowInputs in, LayerCache cache, bf16* out) {
  constexpr int kStride = HD + 8;  // bf16 per shared row: the padding spreads the banks
  constexpr int kSteps = HD / 16;  // k-steps of q . k
  constexpr int kDimTiles = HD / 8;
  __shared__ __align__(16) bf16 k_s[kKeys * kStride];
  __shared__ __align__(16) bf16 v_s[kKeys * kStride];

  const int seq = tiles[blockIdx.x * 3];
  const int first_row = tiles[blockIdx.x * 3 + 1];
  const int tile_rows = tiles[blockIdx.x * 3 + 2];
  const int kv_head = blockIdx.y;
  const int group = shape.num_heads / shape.num_kv_heads;
  const int q_size = shape.num_heads * HD;
  const int kv_size = shape.num_kv_heads * HD;
  const int qkv_width = q_size + 2 * kv_size;
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  const int g = lane / 4;    // fragment row group
  const int tig = lane % 4;  // thread in group

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

  float o[kDimTiles][4];
#pragma unroll
  for (int t = 0; t < kDimTiles; ++t) o[t][0] = o[t][1] = o[t][2] = o[t][3] = 0.0f;
  float m[2] = {-INFINITY, -INFINITY};
  float l[2] = {0.0f, 0.0f};

  const int last_pos = in.positions[first_row + tile_rows - 1];
  const int32_t* blocks = in.blocks + in.seq_block_offset[seq];
  const int bs = cache.block_size;
  constexpr int kVecPerRow = HD / 8;  // 16-byte vectors per key row

  for (int base = 0; base <= last_pos; base += kKeys) {
    __syncthreads();  // the previous chunk is no longer read
    for (int i = threadIdx.x; i < kKeys * kVecPerRow; i += blockDim.x) {
      const int j = i / kVecPerRow;
      const int d = (i % kVecPerRow) * 8;
      const int key = base + j;
      uint4 kv = make_uint4(0, 0, 0, 0), vv = make_uint4(0, 0, 0, 0);
      if (key <= last_pos) {
        const int64_t slot = static_cast<int64_t>(blocks[key / bs]) * bs + key % bs;
        const int64_t at = slot * kv_size + kv_head * HD + d;
        if (cache.fp8()) {  // eight e4m3 bytes widened to the same eight bf16
          kv = fp8x8_to_bf16x8(*reinterpret_cast<const uint2*>(cache.k8 + at));
          vv = fp8x8_to_bf16x8(*reinterpret_cast<const uint2*>(cache.v8 + at));
        } else {
          kv = *reinterpret_cast<const uint4*>(cache.k + at);
          vv = *reinterpret_cast<const uint4*>(cache.v + at);
        }
      }
      *reinterpret_cast<uint4*>(&k_s[j * kStride + d]) = kv;
      *reinterpret_cast<uint4*>(&v_s[j * kStride + d]) = vv;
    }
    __syncthreads();

    // Scores for 64 keys: 8 tiles of 8 keys.
    float s[kKeys / 8][4];
#pragma unroll
    for (int t = 0; t < kKeys / 8; ++t) {
      s[t][0] = s[t][1] = s[t][2] = s[t][3] = 0.0f;
      const bf16* krow = &k_s[(t * 8 + g) * kStride + tig * 2];
#pragma unroll
      for (int st = 0; st < kSteps; ++st) {
        const uint32_t b0 = *reinterpret_cast<const uint32_t*>(krow + st * 16);
        const uint32_t b1 = *reinterpret_cast<const uint32_t*>(krow + st * 16 + 8);
        mma_bf16(s[t], qa[st], b0, b1);
      }
    }
    // Causal mask, then the online softmax per query row (h: rows g and g + 8).
    float chunk_max[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int t = 0; t < kKeys / 8; ++t) {
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        const int key = base + t * 8 + tig * 2 + (c & 1);
        const int h = c / 2;
        if (key > pos[h]) s[t][c] = -INFINITY;
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
    // o += p . v, 16 keys per k-step; p's C fragments are the A fragments of the next mma.
#pragma unroll
    for (int kk = 0; kk < kKeys / 16; ++kk) {
      uint32_t pa[4];
      pa[0] = pack_bf16(s[2 * kk][0], s[2 * kk][1]);
      pa[1] = pack_bf16(s[2 * kk][2], s[2 * kk][3]);
      pa[2] = pack_bf16(s[2 * kk + 1][0], s[2 * kk + 1][1]);
      pa[3] = pack_bf16(s[2 * kk + 1][2], s[2 * kk + 1][3]);
      const bf16* v0 = &v_s[(kk * 16 + tig * 2) * kStride + g];
#pragma unroll
      for (int t = 0; t < kDimTiles; ++t) {
        const bf16* v = v0 + t * 8;
        const uint32_t b0 = pack_bf16(v[0], v[kStride]);
        const uint32_t b1 = pack_bf16(v[8 * kStride], v[9 * kStride]);
        mma_bf16(o[t], pa, b0, b1);
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
  dim3 grid(num_tiles, shape.num_kv_heads);
  switch (shape.head_dim) {
    case 16:
      attention_prefill_mma_kernel<16><<<grid, kWarps * 32, 0, stream>>>(qkv, tiles, shape, in, cache, out);
      break;
    case 32:
      attention_prefill_mma_kernel<32><<<grid, kWarps * 32, 0, stream>>>(qkv, tiles, shape, in, cache, out);
      break;
    case 64:
      attention_prefill_mma_kernel<64><<<grid, kWarps * 32, 0, stream>>>(qkv, tiles, shape, in, cache, out);
      break;
    default:
      attention_prefill_mma_kernel<128><<<grid, kWarps * 32, 0, stream>>>(qkv, tiles, shape, in, cache, out);
      break;
  }
  return cudaGetLastError();
}

}  // namespace paceline::cuda
