// The lm_head's vocabulary slices of a tensor-parallel step, gathered rank-major, laid side by
// side into whole rows of logits (kernels.h).
#include <algorithm>

#include "exec/cuda/kernels.h"

namespace paceline::cuda {
namespace {

constexpr int kThreads = 256;

// Block (row, slice, chunk): copies row `row` of slice `slice` into its place in the whole row.
__global__ void join_vocab_slices_kernel(const float* slices, int64_t slice_stride, int rows,
                                         int64_t per_rank, float* out) {
  const int row = blockIdx.x;
  const int slice = blockIdx.y;
  const float* src = slices + slice * slice_stride + static_cast<int64_t>(row) * per_rank;
  float* dst = out + static_cast<int64_t>(row) * per_rank * gridDim.y + slice * per_rank;
  for (int64_t j = static_cast<int64_t>(blockIdx.z) * kThreads + threadIdx.x; j < per_rank;
       j += static_cast<int64_t>(gridDim.z) * kThreads) {
    dst[j] = src[j];
  }
}

}  // namespace

cudaError_t launch_join_vocab_slices(const float* slices, int world, int64_t slice_stride,
                                     int rows, int64_t per_rank, float* out,
                                     cudaStream_t stream) {
  if (world < 1 || world > 65535 || per_rank < 1 || slice_stride < rows * per_rank) {
    return cudaErrorInvalidValue;
  }
  if (rows <= 0) return cudaGetLastError();
  const auto chunks =
      static_cast<unsigned>(std::min<int64_t>(64, (per_rank + kThreads - 1) / kThreads));
  join_vocab_slices_kernel<<<dim3(static_cast<unsigned>(rows), static_cast<unsigned>(world), chunks),
                             kThreads, 0, stream>>>(slices, slice_stride, rows, per_rank, out);
  return cudaGetLastError();
}

}  // namespace paceline::cuda
