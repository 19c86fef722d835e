// Token embedding lookup into the float32 residual stream.
#include "exec/cuda/kernels.h"

namespace paceline::cuda {
namespace {

__global__ void embedding_kernel(const int32_t* tokens, const bf16* table, int64_t hidden,
                                 float* residual) {
  const int64_t row = blockIdx.x;
  const bf16* src = table + static_cast<int64_t>(tokens[row]) * hidden;
  float* dst = residual + row * hidden;
  for (int64_t i = threadIdx.x; i < hidden; i += blockDim.x) dst[i] = __bfloat162float(src[i]);
}

}  // namespace

cudaError_t launch_embedding(const int32_t* tokens, const bf16* table, int64_t hidden, int rows,
                             float* residual, cudaStream_t stream) {
  if (rows > 0) embedding_kernel<<<rows, 256, 0, stream>>>(tokens, table, hidden, residual);
  return cudaGetLastError();
}

}  // namespace paceline::cuda
