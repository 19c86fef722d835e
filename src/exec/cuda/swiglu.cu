// SwiGLU: silu(gate) * up, float32 in, bf16 out (the input of the down projection).
#include <algorithm>

#include "exec/cuda/device_utils.cuh"
#include "exec/cuda/kernels.h"

namespace paceline::cuda {
namespace {

// Rows in the grid's first dimension (2^31 - 1 of them; the second holds only 65,535, fewer than
// a 128k-token prefill chunk has), the width in the second.
__global__ void swiglu_kernel(const float* gate_up, int64_t width, bf16* out) {
  allow_dependent_launch();  // the down projection may fetch its weights meanwhile
  const int64_t row = blockIdx.x;
  const float* gate = gate_up + row * 2 * width;
  const float* up = gate + width;
  for (int64_t i = blockIdx.y * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < width;
       i += static_cast<int64_t>(gridDim.y) * blockDim.x) {
    const float g = gate[i];
    out[row * width + i] = __float2bfloat16(g / (1.0f + expf(-g)) * up[i]);
  }
}

}  // namespace

cudaError_t launch_swiglu(const float* gate_up, int64_t width, int rows, bf16* out,
                          cudaStream_t stream) {
  if (rows > 0) {
    const int blocks_y = static_cast<int>(std::min<int64_t>(65535, (width + 1023) / 1024));
    swiglu_kernel<<<dim3(rows, blocks_y), 256, 0, stream>>>(gate_up, width, out);
  }
  return cudaGetLastError();
}

}  // namespace paceline::cuda
