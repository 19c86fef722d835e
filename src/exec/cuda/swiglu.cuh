#pragma once
// silu(gate) * up in float32, one expression for every kernel that computes it (the SwiGLU
// kernel, and the small-M GEMM that writes gate_up's SwiGLU itself): the same bits from both.
#include <cuda_runtime.h>

namespace paceline::cuda {

// The add, divide and multiply are spelled as their rounded intrinsics so that no context can
// fuse them differently (a multiply inside expf and the add after it into one FMA, say).
__device__ __forceinline__ float silu_times(float g, float u) {
  return __fmul_rn(__fdiv_rn(g, __fadd_rn(1.0f, expf(-g))), u);
}

}  // namespace paceline::cuda
