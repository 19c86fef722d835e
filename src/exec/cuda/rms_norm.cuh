#pragma once
// RMSNorm's arithmetic, as its kernel (rms_norm.cu) takes it (nvcc only). Session 21 shared it
// with a small-M GEMM that normalized its rows of x as it loaded them; that GEMM was slower on the
// H200 and is gone (docs/performance.md, session 22), the arithmetic stays named here.
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

}  // namespace paceline::cuda
