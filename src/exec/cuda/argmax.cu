// Greedy sampling on the GPU: the index of the largest logit, the lowest among equals (as
// sample_greedy on the CPU, so both pick the same token from the same logits).
#include "exec/cuda/device_utils.cuh"
#include "exec/cuda/kernels.h"
#include "exec/cuda/programmatic_launch.cuh"

namespace paceline::cuda {
namespace {

constexpr int kThreads = 512;

__device__ __forceinline__ bool better(float v, int i, float best_v, int best_i) {
  return v > best_v || (v == best_v && i < best_i);
}

__global__ void argmax_kernel(const float* logits, int64_t vocab, int32_t* out) {
  wait_for_prerequisites();  // the logits are the kernel ahead's (programmatic_launch.cuh)
  const float* row = logits + static_cast<int64_t>(blockIdx.x) * vocab;
  // Each thread scans its stride in increasing index, keeping the first maximum it meets.
  float best_v = -INFINITY;
  int best_i = static_cast<int>(vocab);
  for (int64_t i = threadIdx.x; i < vocab; i += kThreads) {
    const float v = row[i];
    if (best_i == vocab || v > best_v) {
      best_v = v;
      best_i = static_cast<int>(i);
    }
  }
  for (int o = 16; o > 0; o >>= 1) {
    const float ov = __shfl_xor_sync(0xffffffffu, best_v, o);
    const int oi = __shfl_xor_sync(0xffffffffu, best_i, o);
    if (better(ov, oi, best_v, best_i)) {
      best_v = ov;
      best_i = oi;
    }
  }
  __shared__ float sv[kThreads / 32];
  __shared__ int si[kThreads / 32];
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  if (lane == 0) {
    sv[warp] = best_v;
    si[warp] = best_i;
  }
  __syncthreads();
  if (warp == 0) {
    best_v = lane < kThreads / 32 ? sv[lane] : -INFINITY;
    best_i = lane < kThreads / 32 ? si[lane] : static_cast<int>(vocab);
    for (int o = 16; o > 0; o >>= 1) {
      const float ov = __shfl_xor_sync(0xffffffffu, best_v, o);
      const int oi = __shfl_xor_sync(0xffffffffu, best_i, o);
      if (better(ov, oi, best_v, best_i)) {
        best_v = ov;
        best_i = oi;
      }
    }
    // A row of NaNs (or all -inf) keeps index 0, as the CPU's strict comparison does.
    if (lane == 0) out[blockIdx.x] = best_i >= vocab ? 0 : best_i;
  }
}

}  // namespace

cudaError_t launch_argmax(const float* logits, int64_t vocab, int rows, int32_t* out,
                          cudaStream_t stream) {
  if (rows > 0) {
    return launch_after_previous(ChainedKernel::kArgmax, argmax_kernel, dim3(rows), dim3(kThreads),
                                 0, stream, logits, vocab, out);
  }
  return cudaGetLastError();
}

}  // namespace paceline::cuda
