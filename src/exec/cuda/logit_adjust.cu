// The logits processing's sparse adjustments on the GPU (exec/logits_processors.h): one thread
// per adjustment, each on its own (row, token), with the host's adjusted_logit, so that the
// sampling kernel then draws from the logits the CPU executor draws from. A step whose rows ask
// for no bias and no penalty launches nothing.
#include "exec/cuda/kernels.h"

namespace paceline::cuda {
namespace {

constexpr int kThreads = 256;

__global__ void logit_adjust_kernel(float* logits, int64_t vocab,
                                    const LogitAdjustment* adjustments, int n) {
  const int i = static_cast<int>(blockIdx.x) * kThreads + static_cast<int>(threadIdx.x);
  if (i >= n) return;
  const LogitAdjustment a = adjustments[i];
  float* l = logits + static_cast<int64_t>(a.row) * vocab + a.token;
  *l = adjusted_logit(*l, a);
}

}  // namespace

cudaError_t launch_logit_adjustments(float* logits, int64_t vocab,
                                     const LogitAdjustment* adjustments, int n,
                                     cudaStream_t stream) {
  if (n > 0) {
    logit_adjust_kernel<<<(n + kThreads - 1) / kThreads, kThreads, 0, stream>>>(logits, vocab,
                                                                                adjustments, n);
  }
  return cudaGetLastError();
}

}  // namespace paceline::cuda
