#pragma once
// Internal to the prefill attention (attention_prefill*.cu): the wgmma kernel's entry points,
// used by launch_attention_prefill when the shape suits it.
#include "exec/cuda/kernels.h"

namespace paceline::cuda {

// head_dim 128, and a query group dividing 64.
bool prefill_wgmma_supported(AttentionShape shape);
int prefill_wgmma_tile_rows(AttentionShape shape);  // 128 / group
// Whether a launch on this cache copies whole chunks by bulk tensor copies (a cache, bf16 or
// FP8, whose size is known, blocks of a multiple of 8 keys that divide the 128-key chunk, a
// driver that encodes the tensor maps) rather than thread by thread (an FP8 cache: by cp.async
// into the producer's staging buffers).
bool prefill_wgmma_bulk_copies(AttentionShape shape, LayerCache cache);
cudaError_t launch_attention_prefill_wgmma(const float* qkv, const int32_t* tiles, int num_tiles,
                                           AttentionShape shape, RowInputs in, LayerCache cache,
                                           bf16* out, cudaStream_t stream);

}  // namespace paceline::cuda
