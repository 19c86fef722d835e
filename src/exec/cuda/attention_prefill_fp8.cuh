#pragma once
// Internal to the prefill attention (attention_prefill*.cu): the FP8 kernel's entry points, used
// by launch_attention_prefill when the executor asks for FP8 prefill attention.
#include "exec/cuda/kernels.h"

namespace paceline::cuda {

// head_dim 16, 32, 64 or 128, and a query group dividing 128.
bool prefill_fp8_supported(AttentionShape shape);
int prefill_fp8_tile_rows(AttentionShape shape);  // 128 / group
cudaError_t launch_attention_prefill_fp8(const float* qkv, const int32_t* tiles, int num_tiles,
                                         AttentionShape shape, RowInputs in, LayerCache cache,
                                         bf16* out, cudaStream_t stream);

}  // namespace paceline::cuda
