// The merge of decode attention's pieces (attention_decode.cu): per (row, head), the pieces'
// softmax states combined in piece order, so the result depends only on the row's own plan.
#include <cmath>

#include "exec/cuda/kernels.h"

namespace paceline::cuda {
namespace {

__global__ void decode_merge_kernel(const float* __restrict__ partial_acc,
                                    const float* __restrict__ partial_ml,
                                    const int32_t* __restrict__ rows, DecodeSplits splits,
                                    AttentionShape shape, RowInputs in, bf16* __restrict__ out) {
  const int r = blockIdx.x;
  const int head = blockIdx.y;
  const int hd = shape.head_dim;
  const int row = rows[r];
  const int n = decode_split_plan(in.positions[row] + 1, splits).count;
  const int64_t first = (static_cast<int64_t>(r) * shape.num_heads + head) * splits.max_splits;
  const float* ml = partial_ml + first * 2;
  float mm = -INFINITY;
  for (int s = 0; s < n; ++s) mm = fmaxf(mm, ml[2 * s]);
  bf16* dst = out + static_cast<int64_t>(row) * shape.num_heads * hd + static_cast<int64_t>(head) * hd;
  for (int d = threadIdx.x; d < hd; d += blockDim.x) {
    float l = 0.0f, a = 0.0f;
    for (int s = 0; s < n; ++s) {
      const float f = exp2f(ml[2 * s] - mm);
      l += f * ml[2 * s + 1];
      a += f * partial_acc[(first + s) * hd + d];
    }
    dst[d] = __float2bfloat16(n > 0 ? a / l : 0.0f);
  }
}

}  // namespace

cudaError_t launch_attention_decode_merge(const float* partial_acc, const float* partial_ml,
                                          const int32_t* rows, int num_rows, DecodeSplits splits,
                                          AttentionShape shape, RowInputs in, bf16* out,
                                          cudaStream_t stream) {
  if (num_rows > 0) {
    const dim3 grid(num_rows, shape.num_heads);
    const int threads = shape.head_dim >= 128 ? 128 : (shape.head_dim + 31) / 32 * 32;
    decode_merge_kernel<<<grid, threads, 0, stream>>>(partial_acc, partial_ml, rows, splits,
                                                      shape, in, out);
  }
  return cudaGetLastError();
}

}  // namespace paceline::cuda
