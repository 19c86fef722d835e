// Paged attention for rows with one query token each (decode, speculative verify): one block per
// (row, KV head, split), GQA-aware (the group's query heads share every K/V load), then a merge
// of the splits. The keys go in chunks of 32, one per warp pass (a lane scores one key), dealt
// round-robin to the splits' warps, so a long context is spread over num_splits blocks. The
// dealing depends only on the row's context and the fixed num_splits, never on the batch: a
// row's result is the same bits in any batch, eager or replayed from a CUDA graph.
#include "exec/cuda/device_utils.cuh"
#include "exec/cuda/kernels.h"

namespace paceline::cuda {
namespace {

constexpr int kWarps = 4;
constexpr int kMaxGroup = 8;

template <int EPL>  // elements of a head per lane: head_dim <= 32 * EPL
__global__ void __launch_bounds__(kWarps * 32)
    attention_decode_kernel(const float* qkv, const int32_t* rows, int num_splits,
                            AttentionShape shape, RowInputs in, LayerCache cache,
                            float* partial_acc, float* partial_ml) {
  constexpr int HD = 32 * EPL;
  __shared__ float q_s[kMaxGroup][HD];
  __shared__ float p_s[kWarps][kMaxGroup][32];
  __shared__ float w_m[kWarps][kMaxGroup];
  __shared__ float w_l[kWarps][kMaxGroup];
  __shared__ float w_acc[kWarps][kMaxGroup][HD];

  const int row = rows[blockIdx.x];
  const int kv_head = blockIdx.y;
  const int split = blockIdx.z;
  const int end = in.positions[row] + 1;  // keys [0, end)
  const int first = (split * kWarps) * 32;
  if (first >= end) return;  // this row needs fewer splits (or none: a padding row)

  const int hd = shape.head_dim;
  const int group = shape.num_heads / shape.num_kv_heads;
  const int q_size = shape.num_heads * hd;
  const int kv_size = shape.num_kv_heads * hd;
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  const float scale = rsqrtf(static_cast<float>(hd));

  const float* q = qkv + static_cast<int64_t>(row) * (q_size + 2 * kv_size) + kv_head * group * hd;
  for (int i = threadIdx.x; i < kMaxGroup * HD; i += blockDim.x) {
    const int g = i / HD;
    const int d = i % HD;
    q_s[g][d] = (g < group && d < hd) ? q[g * hd + d] : 0.0f;
  }
  __syncthreads();

  const int32_t* blocks = in.blocks + in.seq_block_offset[in.row_seq[row]];
  const int bs = cache.block_size;
  float m[kMaxGroup], l[kMaxGroup], acc[kMaxGroup][EPL];
#pragma unroll
  for (int g = 0; g < kMaxGroup; ++g) {
    m[g] = -INFINITY;
    l[g] = 0.0f;
#pragma unroll
    for (int e = 0; e < EPL; ++e) acc[g][e] = 0.0f;
  }

  for (int base = first + warp * 32; base < end; base += num_splits * kWarps * 32) {
    const int k = base + lane;
    const bool valid = k < end;
    const int block_id = valid ? blocks[k / bs] : 0;
    const int64_t slot = static_cast<int64_t>(block_id) * bs + k % bs;
    float s[kMaxGroup];
#pragma unroll
    for (int g = 0; g < kMaxGroup; ++g) s[g] = 0.0f;
    if (valid) {
      const bf16* key = cache.k + slot * kv_size + kv_head * hd;
      for (int d = 0; d < hd; d += 8) {
        const uint4 raw = *reinterpret_cast<const uint4*>(key + d);
        const __nv_bfloat162* pairs = reinterpret_cast<const __nv_bfloat162*>(&raw);
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const float2 kf = __bfloat1622float2(pairs[j]);
#pragma unroll
          for (int g = 0; g < kMaxGroup; ++g) {
            s[g] += q_s[g][d + 2 * j] * kf.x + q_s[g][d + 2 * j + 1] * kf.y;
          }
        }
      }
    }
#pragma unroll
    for (int g = 0; g < kMaxGroup; ++g) {
      if (g >= group) break;
      const float score = valid ? s[g] * scale : -INFINITY;
      const float m_new = fmaxf(m[g], warp_max(score));
      const float alpha = expf(m[g] - m_new);
      const float p = valid ? expf(score - m_new) : 0.0f;
      l[g] = l[g] * alpha + p;
#pragma unroll
      for (int e = 0; e < EPL; ++e) acc[g][e] *= alpha;
      m[g] = m_new;
      p_s[warp][g][lane] = p;
    }
    __syncwarp();
    const int count = min(32, end - base);
    for (int j = 0; j < count; ++j) {
      const int bj = __shfl_sync(0xffffffffu, block_id, j);
      const int64_t slot_j = static_cast<int64_t>(bj) * bs + (base + j) % bs;
      const int d0 = lane * EPL;
      if (d0 < hd) {
        const bf16* value = cache.v + slot_j * kv_size + kv_head * hd + d0;
        float v[EPL];
#pragma unroll
        for (int e = 0; e < EPL; ++e) v[e] = __bfloat162float(value[e]);
#pragma unroll
        for (int g = 0; g < kMaxGroup; ++g) {
          if (g >= group) break;
          const float p = p_s[warp][g][j];
#pragma unroll
          for (int e = 0; e < EPL; ++e) acc[g][e] += p * v[e];
        }
      }
    }
    __syncwarp();
  }

  // Merge the warps' running softmax states.
#pragma unroll
  for (int g = 0; g < kMaxGroup; ++g) {
    if (g >= group) break;
    const float lsum = warp_sum(l[g]);
    if (lane == 0) {
      w_m[warp][g] = m[g];
      w_l[warp][g] = lsum;
    }
#pragma unroll
    for (int e = 0; e < EPL; ++e) w_acc[warp][g][lane * EPL + e] = acc[g][e];
  }
  __syncthreads();
  for (int i = threadIdx.x; i < group * hd; i += blockDim.x) {
    const int g = i / hd;
    const int d = i % hd;
    float mm = -INFINITY;
    for (int w = 0; w < kWarps; ++w) mm = fmaxf(mm, w_m[w][g]);
    float ll = 0.0f, aa = 0.0f;
    for (int w = 0; w < kWarps; ++w) {
      const float f = w_m[w][g] == -INFINITY ? 0.0f : expf(w_m[w][g] - mm);
      ll += w_l[w][g] * f;
      aa += w_acc[w][g][d] * f;
    }
    const int head = kv_head * group + g;
    const int64_t idx =
        (static_cast<int64_t>(blockIdx.x) * shape.num_heads + head) * num_splits + split;
    partial_acc[idx * hd + d] = aa;
    if (d == 0) {
      partial_ml[idx * 2] = mm;
      partial_ml[idx * 2 + 1] = ll;
    }
  }
}

__global__ void attention_decode_merge_kernel(const float* partial_acc, const float* partial_ml,
                                              const int32_t* rows, int num_splits,
                                              AttentionShape shape, RowInputs in, bf16* out) {
  const int row = rows[blockIdx.x];
  const int head = blockIdx.y;
  const int hd = shape.head_dim;
  const int ctx = in.positions[row] + 1;
  const int splits = min(num_splits, (ctx + kWarps * 32 - 1) / (kWarps * 32));
  const int64_t first = (static_cast<int64_t>(blockIdx.x) * shape.num_heads + head) * num_splits;
  float mm = -INFINITY;
  for (int s = 0; s < splits; ++s) mm = fmaxf(mm, partial_ml[(first + s) * 2]);
  for (int d = threadIdx.x; d < hd; d += blockDim.x) {
    float ll = 0.0f, aa = 0.0f;
    for (int s = 0; s < splits; ++s) {
      const float f = expf(partial_ml[(first + s) * 2] - mm);
      ll += partial_ml[(first + s) * 2 + 1] * f;
      aa += partial_acc[(first + s) * hd + d] * f;
    }
    out[static_cast<int64_t>(row) * shape.num_heads * hd + head * hd + d] =
        __float2bfloat16(splits > 0 ? aa / ll : 0.0f);
  }
}

template <int EPL>
void launch_decode(const float* qkv, const int32_t* rows, int num_rows, int num_splits,
                   AttentionShape shape, RowInputs in, LayerCache cache, float* partial_acc,
                   float* partial_ml, cudaStream_t stream) {
  dim3 grid(num_rows, shape.num_kv_heads, num_splits);
  attention_decode_kernel<EPL><<<grid, kWarps * 32, 0, stream>>>(
      qkv, rows, num_splits, shape, in, cache, partial_acc, partial_ml);
}

}  // namespace

cudaError_t launch_attention_decode(const float* qkv, const int32_t* rows, int num_rows,
                                    int num_splits, AttentionShape shape, RowInputs in,
                                    LayerCache cache, float* partial_acc, float* partial_ml,
                                    cudaStream_t stream) {
  if (shape.num_kv_heads <= 0 || shape.num_heads % shape.num_kv_heads != 0 ||
      shape.num_heads / shape.num_kv_heads > kMaxGroup || shape.head_dim % 8 != 0 ||
      shape.head_dim > 256) {
    return cudaErrorInvalidValue;
  }
  if (num_rows <= 0 || num_splits <= 0) return cudaGetLastError();
  const int hd = shape.head_dim;
  if (hd <= 32) {
    launch_decode<1>(qkv, rows, num_rows, num_splits, shape, in, cache, partial_acc, partial_ml,
                     stream);
  } else if (hd <= 64) {
    launch_decode<2>(qkv, rows, num_rows, num_splits, shape, in, cache, partial_acc, partial_ml,
                     stream);
  } else if (hd <= 128) {
    launch_decode<4>(qkv, rows, num_rows, num_splits, shape, in, cache, partial_acc, partial_ml,
                     stream);
  } else {
    launch_decode<8>(qkv, rows, num_rows, num_splits, shape, in, cache, partial_acc, partial_ml,
                     stream);
  }
  return cudaGetLastError();
}

cudaError_t launch_attention_decode_merge(const float* partial_acc, const float* partial_ml,
                                          const int32_t* rows, int num_rows, int num_splits,
                                          AttentionShape shape, RowInputs in, bf16* out,
                                          cudaStream_t stream) {
  if (num_rows > 0) {
    dim3 grid(num_rows, shape.num_heads);
    attention_decode_merge_kernel<<<grid, 128, 0, stream>>>(partial_acc, partial_ml, rows,
                                                            num_splits, shape, in, out);
  }
  return cudaGetLastError();
}

}  // namespace paceline::cuda
