#pragma once
// Internal to the prefill attention (attention_prefill*.cu): the wgmma kernel's entry points,
// used by launch_attention_prefill when the shape suits it.
#include "exec/cuda/kernels.h"

namespace paceline::cuda {

// head_dim 128, and a query group dividing 64.
bool prefill_wgmma_supported(AttentionShape shape);
int prefill_wgmma_tile_rows(AttentionShape shape);  // 128 / group
cudaError_t launch_attention_prefill_wgmma(const float* qkv, const int32_t* tiles, int num_tiles,
                                           AttentionShape shape, RowInputs in, LayerCache cache,
                                           bf16* out, cudaStream_t stream);

}  // namespace paceline::cuda
