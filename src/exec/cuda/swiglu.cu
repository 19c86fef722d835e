// SwiGLU: silu(gate) * up, float32 in, bf16 out (the input of the down projection).
#include "exec/cuda/kernels.h"

namespace paceline::cuda {
namespace {

__global__ void swiglu_kernel(const float* gate_up, int64_t width, bf16* out) {
  const int64_t row = blockIdx.y;
  const float* gate = gate_up + row * 2 * width;
  const float* up = gate + width;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < width;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float g = gate[i];
    out[row * width + i] = __float2bfloat16(g / (1.0f + expf(-g)) * up[i]);
  }
}

}  // namespace

cudaError_t launch_swiglu(const float* gate_up, int64_t width, int rows, bf16* out,
                          cudaStream_t stream) {
  if (rows > 0) {
    const int blocks_x = static_cast<int>((width + 1023) / 1024);
    swiglu_kernel<<<dim3(blocks_x, rows), 256, 0, stream>>>(gate_up, width, out);
  }
  return cudaGetLastError();
}

}  // namespace paceline::cuda
