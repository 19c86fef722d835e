#pragma once
// Warp and block reductions shared by the kernels (nvcc only).
#include <cuda_bf16.h>

#include <cmath>

namespace paceline::cuda {

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Sum over the block (blockDim.x a multiple of 32, at most 1024); every thread gets the result.
__device__ __forceinline__ float block_sum(float v) {
  __shared__ float partial[32];
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  v = warp_sum(v);
  __syncthreads();  // partial may still be read by a previous call
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  const int warps = static_cast<int>(blockDim.x / 32);
  float total = lane < warps ? partial[lane] : 0.0f;
  return warp_sum(total);
}

// Programmatic dependent launch (sm_90): a kernel that calls allow_dependent_launch() lets the
// next kernel of the stream, if that one was launched programmatically (gemm_small_m.cu), start
// before this one ends; that kernel calls wait_for_prerequisites() before it reads anything this
// one writes (it returns once this grid has finished and its writes are visible). In a kernel
// launched the ordinary way both are no-ops.
__device__ __forceinline__ void allow_dependent_launch() {
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
}
__device__ __forceinline__ void wait_for_prerequisites() {
  asm volatile("griddepcontrol.wait;" ::: "memory");
}

}  // namespace paceline::cuda
