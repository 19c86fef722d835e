// RMSNorm of float32 rows into bf16, optionally gathering the rows (the final norm only needs
// the rows whose logits are wanted). The residual additions are fused into the GEMMs that
// produce them (beta = 1 into the float32 residual), so this kernel only reads.
//
// One block of kThreads per row; thread t takes elements t, t + kThreads, ... With the row in
// registers (rows up to kThreads * 32 wide) every load of a thread is issued before the first
// is used, so a row costs one memory latency instead of one per element; the sum runs in the
// same order as the loop over memory would, so the bits are the loop's. Wider rows take the loop.
#include "exec/cuda/device_utils.cuh"
#include "exec/cuda/kernels.h"
#include "exec/cuda/programmatic_launch.cuh"

namespace paceline::cuda {
namespace {

constexpr int kThreads = 256;

// A thread's sum of squares, one fused multiply-add an element (what `sum += v * v` compiles to,
// written out so that the order and rounding are stated).
__device__ __forceinline__ void add_square(float& sum, float v) { sum = __fmaf_rn(v, v, sum); }

// The block's sum (block_sum: each warp's by warp_sum, then the warps' in one warp).
__device__ __forceinline__ float inverse_rms(float sum_of_squares, int64_t width, float eps) {
  return 1.0f / sqrtf(block_sum(sum_of_squares) / static_cast<float>(width) + eps);
}

__device__ __forceinline__ bf16 normed_element(float weight, float v, float inv_rms) {
  return __float2bfloat16(weight * (v * inv_rms));
}

// Rows up to which the weights are loaded with the row (decode-sized launches, bound by the
// loads' latency); more rows keep the registers for occupancy and load the weights after the
// sum. H200, Qwen3-8B, docs/performance.md "Session 17": decode batch 1 6.10 -> 5.71 ms, batch
// 64 8.91 -> 8.56; prefill of 1,024 rows 27.56 -> 27.9-28.1 ms when they did too. The bits are
// the same either way.
constexpr int kPrefetchRows = 256;

// kPer elements a thread, held in registers; kPrefetch: the weights too, loaded with the row.
template <int kPer, bool kPrefetch>
__global__ void rms_norm_registers_kernel(const float* x, const int32_t* gather,
                                          const float* weight, int64_t width, float eps,
                                          bf16* out) {
  allow_dependent_launch();  // the next GEMM may fetch its weights meanwhile
  const int64_t row = blockIdx.x;
  const int64_t src = gather != nullptr ? gather[row] : row;
  const float* in = x + src * width;
  // The row (and with kPrefetch the norm's weights), every load issued before the first is used
  // (the weights' latency then overlaps the row's and the block's sum instead of following it).
  // The weights first: they do not depend on the kernel ahead (programmatic_launch.cuh).
  float v[kPer], g[kPrefetch ? kPer : 1];
  if constexpr (kPrefetch) {
#pragma unroll
    for (int j = 0; j < kPer; ++j) {
      const int64_t i = threadIdx.x + static_cast<int64_t>(j) * kThreads;
      g[j] = i < width ? weight[i] : 0.0f;
    }
  }
  wait_for_prerequisites();
#pragma unroll
  for (int j = 0; j < kPer; ++j) {
    const int64_t i = threadIdx.x + static_cast<int64_t>(j) * kThreads;
    v[j] = i < width ? in[i] : 0.0f;
  }
  float sum = 0.0f;
#pragma unroll
  for (int j = 0; j < kPer; ++j) {
    if (threadIdx.x + static_cast<int64_t>(j) * kThreads < width) add_square(sum, v[j]);
  }
  const float inv_rms = inverse_rms(sum, width, eps);
  bf16* o = out + row * width;
#pragma unroll
  for (int j = 0; j < kPer; ++j) {
    const int64_t i = threadIdx.x + static_cast<int64_t>(j) * kThreads;
    if (i < width) {
      float gj;
      if constexpr (kPrefetch) {
        gj = g[j];
      } else {
        gj = weight[i];
      }
      o[i] = normed_element(gj, v[j], inv_rms);
    }
  }
}

__global__ void rms_norm_loop_kernel(const float* x, const int32_t* gather, const float* weight,
                                     int64_t width, float eps, bf16* out) {
  allow_dependent_launch();
  const int64_t row = blockIdx.x;
  const int64_t src = gather != nullptr ? gather[row] : row;
  const float* in = x + src * width;
  wait_for_prerequisites();
  float sum = 0.0f;
  for (int64_t i = threadIdx.x; i < width; i += kThreads) add_square(sum, in[i]);
  const float inv_rms = inverse_rms(sum, width, eps);
  bf16* o = out + row * width;
  for (int64_t i = threadIdx.x; i < width; i += kThreads) {
    o[i] = normed_element(weight[i], in[i], inv_rms);
  }
}

}  // namespace

cudaError_t launch_rms_norm(const float* x, const int32_t* gather, const float* weight,
                            int64_t width, float eps, int rows, bf16* out, cudaStream_t stream) {
  if (rows <= 0) return cudaGetLastError();
  const int64_t per = (width + kThreads - 1) / kThreads;
  const auto run = [&](auto kernel) {
    return launch_after_previous(ChainedKernel::kNorm, kernel, dim3(rows), dim3(kThreads), 0,
                                 stream, x, gather, weight, width, eps, out);
  };
  const auto registers = [&](auto kernel_few, auto kernel_many) {
    return run(rows <= kPrefetchRows ? kernel_few : kernel_many);
  };
  if (per <= 4) {
    return registers(rms_norm_registers_kernel<4, true>, rms_norm_registers_kernel<4, false>);
  }
  if (per <= 8) {
    return registers(rms_norm_registers_kernel<8, true>, rms_norm_registers_kernel<8, false>);
  }
  if (per <= 16) {
    return registers(rms_norm_registers_kernel<16, true>, rms_norm_registers_kernel<16, false>);
  }
  if (per <= 32) {
    return registers(rms_norm_registers_kernel<32, true>, rms_norm_registers_kernel<32, false>);
  }
  return run(rms_norm_loop_kernel);
}

cudaError_t launch_rms_norm_loop(const float* x, const int32_t* gather, const float* weight,
                                 int64_t width, float eps, int rows, bf16* out,
                                 cudaStream_t stream) {
  if (rows > 0) {
    rms_norm_loop_kernel<<<rows, kThreads, 0, stream>>>(x, gather, weight, width, eps, out);
  }
  return cudaGetLastError();
}

}  // namespace paceline::cuda
