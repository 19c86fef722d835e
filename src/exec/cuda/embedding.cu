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

__global__ void embedding_slice_kernel(const int32_t* tokens, const bf16* table, int64_t first,
                                       int64_t count, int64_t hidden, float* residual) {
  const int64_t row = blockIdx.x;
  const int64_t local = static_cast<int64_t>(tokens[row]) - first;
  float* dst = residual + row * hidden;
  if (local < 0 || local >= count) {
    for (int64_t i = threadIdx.x; i < hidden; i += blockDim.x) dst[i] = 0.0f;
    return;
  }
  const bf16* src = table + local * hidden;
  for (int64_t i = threadIdx.x; i < hidden; i += blockDim.x) dst[i] = __bfloat162float(src[i]);
}

}  // namespace

cudaError_t launch_embedding_slice(const int32_t* tokens, const bf16* table, int64_t first,
                                   int64_t count, int64_t hidden, int rows, float* residual,
                                   cudaStream_t stream) {
  if (rows > 0) {
    embedding_slice_kernel<<<rows, 256, 0, stream>>>(tokens, table, first, count, hidden,
                                                     residual);
  }
  return cudaGetLastError();
}

cudaError_t launch_embedding(const int32_t* tokens, const bf16* table, int64_t hidden, int rows,
                             float* residual, cudaStream_t stream) {
  if (rows > 0) embedding_kernel<<<rows, 256, 0, stream>>>(tokens, table, hidden, residual);
  return cudaGetLastError();
}

}  // namespace paceline::cuda
