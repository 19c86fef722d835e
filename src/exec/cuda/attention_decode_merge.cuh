#pragma once
// The merge of a row's pieces inside the decode kernel (attention_decode.cu): each block that
// stores a piece counts it on the (row, KV head)'s counter; the one that brings the last piece
// merges them all, in piece order, so the bits never depend on which block that is, and resets
// the counter for the next launch. This saves a launch per layer and its latency.
#include <cmath>

#include "exec/cuda/attention_decode_tile.cuh"

namespace paceline::cuda::decode {

template <int HD>
__device__ __forceinline__ void merge_if_last(uint32_t* smem, int* counter, int pieces,
                                              int group, int max_splits, int64_t first,
                                              bf16* out_row, const float* partial_acc,
                                              const float* partial_ml) {
  __shared__ int last;
  __threadfence();  // this block's piece is visible to whoever counts the last one
  __syncthreads();
  if (threadIdx.x == 0) {
    last = atomicAdd(counter, 1) == pieces - 1;
    if (last) *counter = 0;
  }
  __syncthreads();
  if (!last) return;
  __threadfence();
  // Over the staging (free now): each piece's (max, sum), then its weight exp2(m - M).
  float* sm_w = reinterpret_cast<float*>(smem);  // [group][pieces]
  float* sm_l = sm_w + group * pieces;           // [group][pieces]
  float* sm_sum = sm_l + group * pieces;         // [group]
  for (int t = threadIdx.x; t < group * pieces; t += blockDim.x) {
    const int h = t / pieces;
    const int s = t % pieces;
    const float2 ml = __ldcg(reinterpret_cast<const float2*>(partial_ml) + first +
                             static_cast<int64_t>(h) * max_splits + s);
    sm_w[t] = ml.x;
    sm_l[t] = ml.y;
  }
  __syncthreads();
  for (int h = threadIdx.x; h < group; h += blockDim.x) {
    float mm = -INFINITY;
    for (int s = 0; s < pieces; ++s) mm = fmaxf(mm, sm_w[h * pieces + s]);
    float l = 0.0f;
    for (int s = 0; s < pieces; ++s) {
      const float f = exp2f(sm_w[h * pieces + s] - mm);
      sm_w[h * pieces + s] = f;
      l += f * sm_l[h * pieces + s];
    }
    sm_sum[h] = l;
  }
  __syncthreads();
  for (int t = threadIdx.x; t < group * HD; t += blockDim.x) {
    const int h = t / HD;
    const int d = t % HD;
    const float* pa = partial_acc + (first + static_cast<int64_t>(h) * max_splits) * HD + d;
    const float* w = sm_w + h * pieces;
    float a = 0.0f;
#pragma unroll 8
    for (int s = 0; s < pieces; ++s) a += w[s] * __ldcg(pa + static_cast<int64_t>(s) * HD);
    out_row[t] = __float2bfloat16(a / sm_sum[h]);
  }
}

}  // namespace paceline::cuda::decode
