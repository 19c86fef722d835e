// SwiGLU: silu(gate) * up, float32 in, bf16 out (the input of the down projection).
//
// Elementwise, so how the elements are split among threads leaves the bits alone: rows whose
// width is a multiple of 4 go four elements a thread (16-byte loads of gate and up, one 8-byte
// store), the others one.
#include <algorithm>

#include "exec/cuda/device_utils.cuh"
#include "exec/cuda/kernels.h"
#include "exec/cuda/programmatic_launch.cuh"

namespace paceline::cuda {
namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ float silu_times(float g, float u) { return g / (1.0f + expf(-g)) * u; }

// Rows in the grid's first dimension (2^31 - 1 of them; the second holds only 65,535, fewer than
// a 128k-token prefill chunk has), the width in the second.
__global__ void swiglu_kernel(const float* gate_up, int64_t width, bf16* out) {
  allow_dependent_launch();  // the down projection may fetch its weights meanwhile
  wait_for_prerequisites();  // gate_up is the kernel ahead's (programmatic_launch.cuh)
  const int64_t row = blockIdx.x;
  const float* gate = gate_up + row * 2 * width;
  const float* up = gate + width;
  for (int64_t i = blockIdx.y * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < width;
       i += static_cast<int64_t>(gridDim.y) * blockDim.x) {
    out[row * width + i] = __float2bfloat16(silu_times(gate[i], up[i]));
  }
}

// width % 4 == 0: element groups of four.
__global__ void swiglu4_kernel(const float* gate_up, int64_t width, bf16* out) {
  allow_dependent_launch();
  wait_for_prerequisites();
  const int64_t row = blockIdx.x;
  const auto* gate = reinterpret_cast<const float4*>(gate_up + row * 2 * width);
  const auto* up = reinterpret_cast<const float4*>(gate_up + row * 2 * width + width);
  auto* o = reinterpret_cast<uint2*>(out + row * width);
  const int64_t groups = width / 4;
  for (int64_t i = blockIdx.y * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < groups;
       i += static_cast<int64_t>(gridDim.y) * blockDim.x) {
    const float4 g = gate[i], u = up[i];
    const __nv_bfloat162 lo = __floats2bfloat162_rn(silu_times(g.x, u.x), silu_times(g.y, u.y));
    const __nv_bfloat162 hi = __floats2bfloat162_rn(silu_times(g.z, u.z), silu_times(g.w, u.w));
    uint2 packed;
    packed.x = *reinterpret_cast<const uint32_t*>(&lo);
    packed.y = *reinterpret_cast<const uint32_t*>(&hi);
    o[i] = packed;
  }
}

}  // namespace

cudaError_t launch_swiglu(const float* gate_up, int64_t width, int rows, bf16* out,
                          cudaStream_t stream) {
  if (rows <= 0) return cudaGetLastError();
  const auto aligned = [](const void* p, size_t n) { return reinterpret_cast<uintptr_t>(p) % n == 0; };
  if (width % 4 == 0 && aligned(gate_up, 16) && aligned(out, 8)) {
    const int64_t groups = width / 4;
    const int blocks_y = static_cast<int>(std::min<int64_t>(65535, (groups + kThreads - 1) / kThreads));
    return launch_after_previous(ChainedKernel::kSwiglu, swiglu4_kernel, dim3(rows, blocks_y),
                                 dim3(kThreads), 0, stream, gate_up, width, out);
  }
  const int blocks_y = static_cast<int>(std::min<int64_t>(65535, (width + 1023) / 1024));
  return launch_after_previous(ChainedKernel::kSwiglu, swiglu_kernel, dim3(rows, blocks_y),
                               dim3(kThreads), 0, stream, gate_up, width, out);
}

}  // namespace paceline::cuda
