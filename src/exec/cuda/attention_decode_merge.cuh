#pragma once
// The merge of a row's pieces (attention_decode.cu launches it after the decode kernel): one
// block per (row, KV head), the pieces combined in piece order, so the result depends only on
// the row's own plan. Rows of one piece (their output is written by the decode kernel) and
// padding rows return at once. Loads go out 16 or 32 pieces at a time (kMergeBatch), four
// elements per lane, so a merge costs a few memory round trips whatever the piece count; fusing
// it into the decode kernel (the last block of a row merging) cost two round trips per work
// item instead.
#include <cmath>

#include "exec/cuda/device_utils.cuh"
#include "exec/cuda/kernels.h"

namespace paceline::cuda::decode {

constexpr int kMergeThreads = 128;
// Pieces loaded per round trip: 16 for plans of at most 16 pieces; 32 above (160 registers a
// thread against fewer, so fewer merge blocks fit an SM; only where it saves a round trip).
// The adds stay in piece order either way, so the bits do not depend on it.
constexpr int kMergeBatch = 16;
constexpr int kMergeBatchLong = 32;

template <int HD, int kBatch = kMergeBatch>
__global__ void __launch_bounds__(kMergeThreads)
    merge_kernel(const float* __restrict__ partial_acc, const float* __restrict__ partial_ml,
                 const int32_t* __restrict__ rows, DecodeSplits splits, AttentionShape shape,
                 RowInputs in, bf16* __restrict__ out) {
  extern __shared__ float merge_smem[];  // weights and sums [group][max_splits], totals [group]
  allow_dependent_launch();               // o_proj may fetch its weights meanwhile
  const int r = blockIdx.x;
  const int kv_head = blockIdx.y;
  const int row = rows[r];
  const int n = decode_split_plan(in.positions[row] + 1, splits).count;
  // The pieces are the decode kernel's (programmatic_launch.cuh). Every block waits, also one with
  // nothing to merge: a grid none of whose threads waited could end before the decode kernel
  // does, and the kernel after it would only wait for this one.
  wait_for_prerequisites();
  if (n <= 1) return;
  const int group = shape.num_heads / shape.num_kv_heads;
  const int64_t first =
      (static_cast<int64_t>(r) * shape.num_heads + kv_head * group) * splits.max_splits;
  float* sm_w = merge_smem;
  float* sm_l = sm_w + group * splits.max_splits;
  float* sm_sum = sm_l + group * splits.max_splits;
  for (int t = threadIdx.x; t < group * n; t += blockDim.x) {
    const int h = t / n;
    const int s = t % n;
    const float2 ml = reinterpret_cast<const float2*>(partial_ml)[first + h * splits.max_splits + s];
    sm_w[h * splits.max_splits + s] = ml.x;
    sm_l[h * splits.max_splits + s] = ml.y;
  }
  __syncthreads();
  for (int h = threadIdx.x; h < group; h += blockDim.x) {
    float* w = sm_w + h * splits.max_splits;
    const float* ls = sm_l + h * splits.max_splits;
    float mm = -INFINITY;
    for (int s = 0; s < n; ++s) mm = fmaxf(mm, w[s]);
    float l = 0.0f;
    for (int s = 0; s < n; ++s) {
      w[s] = exp2f(w[s] - mm);
      l += w[s] * ls[s];
    }
    sm_sum[h] = l;
  }
  __syncthreads();
  constexpr int kQuads = HD / 4;
  bf16* dst = out + (static_cast<int64_t>(row) * shape.num_heads + kv_head * group) * HD;
  for (int o = threadIdx.x; o < group * kQuads; o += blockDim.x) {
    const int h = o / kQuads;
    const float4* pa = reinterpret_cast<const float4*>(
                           partial_acc + (first + static_cast<int64_t>(h) * splits.max_splits) * HD) +
                       o % kQuads;
    const float* w = sm_w + h * splits.max_splits;
    float4 a = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    for (int s0 = 0; s0 < n; s0 += kBatch) {
      float4 v[kBatch];
#pragma unroll
      for (int i = 0; i < kBatch; ++i) {
        if (s0 + i < n) v[i] = pa[static_cast<int64_t>(s0 + i) * kQuads];
      }
#pragma unroll
      for (int i = 0; i < kBatch; ++i) {
        if (s0 + i < n) {
          const float f = w[s0 + i];
          a.x += f * v[i].x, a.y += f * v[i].y, a.z += f * v[i].z, a.w += f * v[i].w;
        }
      }
    }
    const float l = sm_sum[h];
    __nv_bfloat162* d2 = reinterpret_cast<__nv_bfloat162*>(dst + 4 * o);
    d2[0] = __floats2bfloat162_rn(a.x / l, a.y / l);
    d2[1] = __floats2bfloat162_rn(a.z / l, a.w / l);
  }
}

}  // namespace paceline::cuda::decode
