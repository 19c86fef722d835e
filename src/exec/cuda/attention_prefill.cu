// Prefill attention: a block takes a tile of consecutive rows of one sequence and one KV head
// with its whole query group, and streams the sequence's keys [0, last position of the tile]
// through shared memory in chunks of 32, so each K/V load serves every query of the tile.
// Varlen and causal: each row attends to the cached prefix and to the rows before it.
// CUDA cores, float32 arithmetic: the fallback for shapes the tensor-core kernels do not take,
// and the reference they were checked against. The kernel for a shape: the wgmma kernel
// (attention_prefill_wgmma.cu, head_dim 128), else the mma.sync kernel
// (attention_prefill_mma.cu), else this one; PACELINE_PREFILL_ATTENTION=mma or =simt forces the
// later ones, to compare them. FP8 prefill attention (PrefillPrecision::fp8) takes the FP8 kernel
// (attention_prefill_fp8.cu) for the shapes it covers, whatever that variable says, and the bf16
// choice above for the rest.
#include "exec/cuda/attention_prefill_fp8.cuh"
#include "exec/cuda/attention_prefill_mma.cuh"
#include "exec/cuda/attention_prefill_wgmma.cuh"
#include "exec/cuda/kv_fp8.cuh"
#include "exec/cuda/device_utils.cuh"
#include "exec/cuda/kernels.h"

#include <cstdlib>
#include <string>

namespace paceline::cuda {
namespace {

constexpr int kWarps = 4;
constexpr int kChunk = 32;

template <int EPL>
struct PrefillConfig {
  static constexpr int HD = 32 * EPL;
  static constexpr int kMaxQueries = EPL >= 8 ? 8 : 16;  // queries (row, head) per warp
  static constexpr size_t smem_bytes() {
    return sizeof(float) * (kWarps * kMaxQueries * HD + kChunk * (HD + 1) + kChunk * HD +
                            kWarps * kMaxQueries * kChunk);
  }
};

int rows_per_warp(AttentionShape shape, int max_queries) {
  const int group = shape.num_heads / shape.num_kv_heads;
  return group >= max_queries ? 1 : max_queries / group;
}

int epl_of(int head_dim) { return head_dim <= 32 ? 1 : head_dim <= 64 ? 2 : head_dim <= 128 ? 4 : 8; }

template <int EPL>
__global__ void __launch_bounds__(kWarps * 32)
    attention_prefill_kernel(const float* qkv, const int32_t* tiles, int rows_per_warp,
                             AttentionShape shape, RowInputs in, LayerCache cache, bf16* out) {
  allow_dependent_launch();  // o_proj may fetch its weights meanwhile
  using C = PrefillConfig<EPL>;
  constexpr int HD = C::HD;
  constexpr int MQ = C::kMaxQueries;
  extern __shared__ float smem[];
  float* q_s = smem;                             // [kWarps][MQ][HD]
  float* k_s = q_s + kWarps * MQ * HD;           // [kChunk][HD + 1]
  float* v_s = k_s + kChunk * (HD + 1);          // [kChunk][HD]
  float* p_s = v_s + kChunk * HD;                // [kWarps][MQ][kChunk]

  const int seq = tiles[blockIdx.x * 3];
  const int first_row = tiles[blockIdx.x * 3 + 1];
  const int tile_rows = tiles[blockIdx.x * 3 + 2];
  const int kv_head = blockIdx.y;
  const int hd = shape.head_dim;
  const int group = shape.num_heads / shape.num_kv_heads;
  const int q_size = shape.num_heads * hd;
  const int kv_size = shape.num_kv_heads * hd;
  const int qkv_width = q_size + 2 * kv_size;
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  const float scale = rsqrtf(static_cast<float>(hd));

  // This warp's queries: rows first_row + warp * rows_per_warp + r, heads of the group.
  const int warp_first = warp * rows_per_warp;
  int my_pos[MQ];
  float* my_q = q_s + warp * MQ * HD;
#pragma unroll
  for (int i = 0; i < MQ; ++i) {
    const int r = warp_first + i / group;
    const int g = i % group;
    const bool live = i < rows_per_warp * group && r < tile_rows;
    my_pos[i] = live ? in.positions[first_row + r] : -1;
    const float* q = qkv + static_cast<int64_t>(first_row + (live ? r : 0)) * qkv_width +
                     (kv_head * group + g) * hd;
    for (int d = lane; d < HD; d += 32) my_q[i * HD + d] = (live && d < hd) ? q[d] : 0.0f;
  }
  const int last_pos = in.positions[first_row + tile_rows - 1];
  const int32_t* blocks = in.blocks + in.seq_block_offset[seq];
  const int bs = cache.block_size;

  float m[MQ], l[MQ], acc[MQ][EPL];
#pragma unroll
  for (int i = 0; i < MQ; ++i) {
    m[i] = -INFINITY;
    l[i] = 0.0f;
#pragma unroll
    for (int e = 0; e < EPL; ++e) acc[i][e] = 0.0f;
  }

  for (int base = 0; base <= last_pos; base += kChunk) {
    __syncthreads();  // the previous chunk is no longer read
    const int count = min(kChunk, last_pos + 1 - base);
    for (int i = threadIdx.x; i < kChunk * (HD / 2); i += blockDim.x) {
      const int j = i / (HD / 2);
      const int d = 2 * (i % (HD / 2));
      float2 kf = make_float2(0.0f, 0.0f), vf = make_float2(0.0f, 0.0f);
      if (j < count && d < hd) {
        const int key = base + j;
        const int64_t at =
            kv_row(blocks[key / bs], key % bs, kv_head, shape.num_kv_heads, bs) * hd + d;
        if (cache.fp8()) {
          kf = fp8x2_to_float2(*reinterpret_cast<const uint16_t*>(cache.k8 + at));
          vf = fp8x2_to_float2(*reinterpret_cast<const uint16_t*>(cache.v8 + at));
        } else {
          kf = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(cache.k + at));
          vf = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(cache.v + at));
        }
      }
      k_s[j * (HD + 1) + d] = kf.x;
      k_s[j * (HD + 1) + d + 1] = kf.y;
      v_s[j * HD + d] = vf.x;
      v_s[j * HD + d + 1] = vf.y;
    }
    __syncthreads();

    // Scores: lane j scores key base + j against each of the warp's queries.
    float s[MQ];
#pragma unroll
    for (int i = 0; i < MQ; ++i) s[i] = 0.0f;
    const float* krow = k_s + lane * (HD + 1);
    for (int d = 0; d < hd; ++d) {
      const float kd = krow[d];
#pragma unroll
      for (int i = 0; i < MQ; ++i) s[i] += my_q[i * HD + d] * kd;
    }
    const int key = base + lane;
    float* my_p = p_s + warp * MQ * kChunk;
#pragma unroll
    for (int i = 0; i < MQ; ++i) {
      const bool valid = lane < count && key <= my_pos[i];
      const float score = valid ? s[i] * scale : -INFINITY;
      const float chunk_max = warp_max(score);
      float p = 0.0f;
      if (chunk_max != -INFINITY) {  // warp-uniform: some key of the chunk is visible
        const float m_new = fmaxf(m[i], chunk_max);
        const float alpha = expf(m[i] - m_new);
        p = valid ? expf(score - m_new) : 0.0f;
        l[i] = l[i] * alpha + p;
#pragma unroll
        for (int e = 0; e < EPL; ++e) acc[i][e] *= alpha;
        m[i] = m_new;
      }
      my_p[i * kChunk + lane] = p;
    }
    __syncwarp();
    const int d0 = lane * EPL;
    for (int j = 0; j < count; ++j) {
      float v[EPL];
#pragma unroll
      for (int e = 0; e < EPL; ++e) v[e] = v_s[j * HD + d0 + e];
#pragma unroll
      for (int i = 0; i < MQ; ++i) {
        const float p = my_p[i * kChunk + j];
#pragma unroll
        for (int e = 0; e < EPL; ++e) acc[i][e] += p * v[e];
      }
    }
  }

#pragma unroll
  for (int i = 0; i < MQ; ++i) {
    const float lsum = warp_sum(l[i]);
    if (my_pos[i] < 0) continue;
    const int r = warp_first + i / group;
    const int head = kv_head * group + i % group;
    bf16* o = out + static_cast<int64_t>(first_row + r) * q_size + head * hd;
    const int d0 = lane * EPL;
#pragma unroll
    for (int e = 0; e < EPL; ++e) {
      if (d0 + e < hd) o[d0 + e] = __float2bfloat16(lsum > 0.0f ? acc[i][e] / lsum : 0.0f);
    }
  }
}

template <int EPL>
cudaError_t launch_prefill(const float* qkv, const int32_t* tiles, int num_tiles,
                           AttentionShape shape, RowInputs in, LayerCache cache, bf16* out,
                           cudaStream_t stream) {
  using C = PrefillConfig<EPL>;
  static bool attribute_set = false;
  if (!attribute_set) {
    cudaError_t e = cudaFuncSetAttribute(attention_prefill_kernel<EPL>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         static_cast<int>(C::smem_bytes()));
    if (e != cudaSuccess) return e;
    attribute_set = true;
  }
  dim3 grid(num_tiles, shape.num_kv_heads);
  attention_prefill_kernel<EPL><<<grid, kWarps * 32, C::smem_bytes(), stream>>>(
      qkv, tiles, rows_per_warp(shape, C::kMaxQueries), shape, in, cache, out);
  return cudaGetLastError();
}

enum class Forced { none, mma, simt };

Forced forced_kernel() {
  static const Forced forced = [] {
    const char* env = std::getenv("PACELINE_PREFILL_ATTENTION");
    const std::string v = env != nullptr ? env : "";
    return v == "simt" ? Forced::simt : v == "mma" ? Forced::mma : Forced::none;
  }();
  return forced;
}

bool use_wgmma(AttentionShape shape) {
  return forced_kernel() == Forced::none && prefill_wgmma_supported(shape);
}

bool use_mma(AttentionShape shape) {
  return forced_kernel() != Forced::simt && prefill_mma_supported(shape);
}

bool use_fp8(AttentionShape shape, PrefillPrecision precision) {
  return precision == PrefillPrecision::fp8 && prefill_fp8_supported(shape);
}

}  // namespace

bool prefill_attention_fp8_supported(AttentionShape shape) { return prefill_fp8_supported(shape); }

int prefill_tile_rows(AttentionShape shape, PrefillPrecision precision) {
  if (use_fp8(shape, precision)) return prefill_fp8_tile_rows(shape);
  if (use_wgmma(shape)) return prefill_wgmma_tile_rows(shape);
  if (use_mma(shape)) return prefill_mma_tile_rows(shape);
  const int epl = epl_of(shape.head_dim);
  return kWarps * rows_per_warp(shape, epl >= 8 ? 8 : 16);
}

cudaError_t launch_attention_prefill(const float* qkv, const int32_t* tiles, int num_tiles,
                                     AttentionShape shape, RowInputs in, LayerCache cache,
                                     bf16* out, cudaStream_t stream,
                                     PrefillPrecision precision) {
  if (shape.num_kv_heads <= 0 || shape.num_heads % shape.num_kv_heads != 0 ||
      shape.head_dim % 2 != 0 || shape.head_dim > 256 ||
      shape.num_heads / shape.num_kv_heads > (epl_of(shape.head_dim) >= 8 ? 8 : 16)) {
    return cudaErrorInvalidValue;
  }
  if (num_tiles <= 0) return cudaGetLastError();
  if (use_fp8(shape, precision)) {
    return launch_attention_prefill_fp8(qkv, tiles, num_tiles, shape, in, cache, out, stream);
  }
  if (use_wgmma(shape)) {
    return launch_attention_prefill_wgmma(qkv, tiles, num_tiles, shape, in, cache, out, stream);
  }
  if (use_mma(shape)) {
    return launch_attention_prefill_mma(qkv, tiles, num_tiles, shape, in, cache, out, stream);
  }
  switch (epl_of(shape.head_dim)) {
    case 1: return launch_prefill<1>(qkv, tiles, num_tiles, shape, in, cache, out, stream);
    case 2: return launch_prefill<2>(qkv, tiles, num_tiles, shape, in, cache, out, stream);
    case 4: return launch_prefill<4>(qkv, tiles, num_tiles, shape, in, cache, out, stream);
    default: return launch_prefill<8>(qkv, tiles, num_tiles, shape, in, cache, out, stream);
  }
}

}  // namespace paceline::cuda
