#pragma once
// How the decode attention cuts a row's context into pieces (the work items of its persistent
// grid, attention_decode.cu), and which constants the executor takes. Plain C++ (shared by g++
// and nvcc, and by the CPU-only tests).
//
// A row of context ctx is cut into decode_split_plan(ctx, splits).count pieces of `chunk` keys;
// the plan depends only on the row's own context and the fixed constants, never on the batch, so
// a row gets the same bits in any batch, eager or replayed from a CUDA graph.
#include <cstdio>
#include <optional>
#include <string>

namespace paceline::cuda {

struct DecodeSplits {
  int max_splits = 16;  // pieces per row at most (the partials' stride)
  int min_chunk = 128;  // keys per piece at least, before rounding to whole 64-key rounds
};

struct DecodeSplitPlan {
  int count = 0;  // pieces with keys
  int chunk = 0;  // keys per piece (the last may have fewer)
};

#if defined(__CUDACC__)
#define PACELINE_HOST_DEVICE __host__ __device__
#else
#define PACELINE_HOST_DEVICE
#endif

// Enough pieces to spread a long context over the GPU at batch 1, each a multiple of 64 keys
// (4 warps x 16-key tiles), never shorter than min_chunk unless the context is.
PACELINE_HOST_DEVICE inline DecodeSplitPlan decode_split_plan(int ctx, DecodeSplits s) {
  if (ctx <= 0) return {0, 0};
  int n = (ctx + s.min_chunk - 1) / s.min_chunk;
  if (n > s.max_splits) n = s.max_splits;
  const int chunk = ((ctx + n - 1) / n + 63) / 64 * 64;
  return {(ctx + chunk - 1) / chunk, chunk};
}

// The most pieces a plan may ask for (the merge kernel's shared memory and the partials' size
// grow with it).
inline constexpr int kMaxDecodeSplits = 256;

// The executor's plans, one per cache element type (docs/performance.md, "Session 21"):
// bf16 reads are bound by bandwidth from 16 pieces on; an FP8 piece costs about as much work
// per key but half the bytes, so its launch is bound by how evenly the pieces fill the device's
// block slots, and more, shorter pieces even them out.
inline constexpr DecodeSplits kDecodePlanBf16{16, 128};
inline constexpr DecodeSplits kDecodePlanFp8{16, 128};

// PACELINE_DECODE_SPLITS's value "MAX,MIN" (max_splits, min_chunk) for measuring other plans:
// nullptr (unset) gives the plan of the cache type; anything else that is not two integers with
// 1 <= MAX <= kMaxDecodeSplits and 16 <= MIN <= 1048576 is an error, described in *error.
inline std::optional<DecodeSplits> decode_splits_from(const char* value, bool fp8,
                                                      std::string* error) {
  if (value == nullptr) return fp8 ? kDecodePlanFp8 : kDecodePlanBf16;
  int max_splits = 0, min_chunk = 0;
  char tail = 0;
  if (std::sscanf(value, "%d,%d%c", &max_splits, &min_chunk, &tail) != 2 || max_splits < 1 ||
      max_splits > kMaxDecodeSplits || min_chunk < 16 || min_chunk > 1048576) {
    *error = "PACELINE_DECODE_SPLITS=\"" + std::string(value) +
             "\": expected MAX,MIN (pieces per row at most, 1 to " +
             std::to_string(kMaxDecodeSplits) + "; keys per piece at least, 16 to 1048576)";
    return std::nullopt;
  }
  return DecodeSplits{max_splits, min_chunk};
}

}  // namespace paceline::cuda
