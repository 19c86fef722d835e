#pragma once
// CUDA-graph capture sizes: the decode batch sizes that replay a captured graph. A decode batch
// is padded up to the smallest captured size that holds it; above the largest it runs eagerly.
#include <cstdint>
#include <string_view>
#include <vector>

namespace paceline {

// Largest size a list may name; guards against "1-1000000000" expanding without bound.
inline constexpr int32_t kMaxCudagraphCaptureSize = 65536;

// Parses a list such as "1-32,48,64,128": comma-separated positive sizes or inclusive ranges
// "a-b" (a <= b), spaces around elements allowed. Returns the sizes sorted and deduplicated.
// Throws paceline::Error naming the offending element (empty, not a number, zero, reversed range,
// above kMaxCudagraphCaptureSize) or an empty list.
std::vector<int32_t> parse_cudagraph_capture_sizes(std::string_view spec);

// 1,2,4,8,16,32,48,64,128,256,512, keeping only sizes <= max_num_seqs (as vLLM does: max_num_seqs
// itself is not added, so with max_num_seqs = 100 a batch of 100 runs eagerly).
// Throws paceline::Error when max_num_seqs < 1.
std::vector<int32_t> default_cudagraph_capture_sizes(int32_t max_num_seqs);

// The smallest size in `sizes` (sorted ascending) that is >= batch, or 0 (eager) when batch is
// above the largest or `sizes` is empty. A batch < 1 has nothing to replay: 0.
int32_t padded_batch_size(const std::vector<int32_t>& sizes, int32_t batch);

}  // namespace paceline
