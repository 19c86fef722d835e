// RMSNorm of float32 rows into bf16, optionally gathering the rows (the final norm only needs
// the rows whose logits are wanted). The residual additions are fused into the GEMMs that
// produce them (beta = 1 into the float32 residual), so this kernel only reads.
#include "exec/cuda/device_utils.cuh"
#include "exec/cuda/kernels.h"

namespace paceline::cuda {
namespace {

__global__ void rms_norm_kernel(const float* x, const int32_t* gather, const float* weight,
                                int64_t width, float eps, bf16* out) {
  allow_dependent_launch();  // the next GEMM may fetch its weights meanwhile
  const int64_t row = blockIdx.x;
  const int64_t src = gather != nullptr ? gather[row] : row;
  const float* in = x + src * width;
  float sum = 0.0f;
  for (int64_t i = threadIdx.x; i < width; i += blockDim.x) sum += in[i] * in[i];
  sum = block_sum(sum);
  const float inv_rms = 1.0f / sqrtf(sum / static_cast<float>(width) + eps);
  bf16* o = out + row * width;
  for (int64_t i = threadIdx.x; i < width; i += blockDim.x) {
    o[i] = __float2bfloat16(weight[i] * (in[i] * inv_rms));
  }
}

}  // namespace

cudaError_t launch_rms_norm(const float* x, const int32_t* gather, const float* weight,
                            int64_t width, float eps, int rows, bf16* out, cudaStream_t stream) {
  if (rows > 0) rms_norm_kernel<<<rows, 256, 0, stream>>>(x, gather, weight, width, eps, out);
  return cudaGetLastError();
}

}  // namespace paceline::cuda
