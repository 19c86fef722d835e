#pragma once
// RMSNorm's arithmetic, shared by its own kernel (rms_norm.cu) and by the small-M GEMM that
// normalizes its rows of x as it loads them (gemm_small_m.cu), so that both give the same bits
// (nvcc only).
//
// The kernel: kNormThreads threads a row; thread t sums the squares of elements t, t +
// kNormThreads, ... in that order, the block adds the threads' sums (block_sum: each warp's by
// warp_sum, then the warps' in one warp), and element i becomes bf16(weight[i] * (x[i] * inv)).
#include "exec/cuda/device_utils.cuh"
#include "exec/cuda/kernels.h"

namespace paceline::cuda {

inline constexpr int kNormThreads = 256;

__device__ __forceinline__ void add_square(float& sum, float v) { sum = __fmaf_rn(v, v, sum); }

__device__ __forceinline__ float inverse_rms_of(float total, int64_t width, float eps) {
  return 1.0f / sqrtf(total / static_cast<float>(width) + eps);
}

__device__ __forceinline__ bf16 normed_element(float weight, float v, float inv_rms) {
  return __float2bfloat16(weight * (v * inv_rms));
}

// The inverse RMS of one row as the kernel's kNormThreads threads take it, computed by a block of
// kNormThreads / 2 threads: thread t stands for the kernel's threads t and t + 128 (its warp w
// for the kernel's warps w and w + 4, lane for lane), so every sum runs in the kernel's order.
// `partial` is kNormThreads / 32 floats of shared memory; every thread of the block calls it and
// gets the result.
__device__ __forceinline__ float inverse_rms_half_block(const float* row, int64_t width,
                                                       float eps, float* partial) {
  constexpr int kHalf = kNormThreads / 2;
  const int t = static_cast<int>(threadIdx.x);
  float lo = 0.0f, hi = 0.0f;
  // 16 of each virtual thread's elements loaded before they are summed (one round trip a row
  // of 4,096).
  constexpr int kBatch = 16;
  for (int64_t j0 = 0; j0 * kNormThreads < width; j0 += kBatch) {
    float a[kBatch], b[kBatch];
#pragma unroll
    for (int j = 0; j < kBatch; ++j) {
      const int64_t i = t + (j0 + j) * kNormThreads;
      a[j] = i < width ? row[i] : 0.0f;
      b[j] = i + kHalf < width ? row[i + kHalf] : 0.0f;
    }
#pragma unroll
    for (int j = 0; j < kBatch; ++j) {
      const int64_t i = t + (j0 + j) * kNormThreads;
      if (i < width) add_square(lo, a[j]);
      if (i + kHalf < width) add_square(hi, b[j]);
    }
  }
  lo = warp_sum(lo);
  hi = warp_sum(hi);
  const int lane = t % 32;
  const int warp = t / 32;
  __syncthreads();  // partial may still be read by a previous call
  if (lane == 0) {
    partial[warp] = lo;
    partial[warp + kHalf / 32] = hi;
  }
  __syncthreads();
  const float total = warp_sum(lane < kNormThreads / 32 ? partial[lane] : 0.0f);
  return inverse_rms_of(total, width, eps);
}

}  // namespace paceline::cuda
