#pragma once
// How the decode attention cuts a row's context into pieces (the work items of its persistent
// grid, attention_decode.cu), and which constants the executor takes. Plain C++ (shared by g++
// and nvcc, and by the CPU-only tests).
//
// A row of context ctx is cut into decode_split_plan(ctx, splits).count pieces of `chunk` keys;
// the plan depends only on the row's own context and the fixed constants, never on the batch, so
// a row gets the same bits in any batch, eager or replayed from a CUDA graph.
#include <cstdlib>
#include <optional>
#include <string>

namespace paceline::cuda {

// Whether a decode block issues its next work item's first tiles before it merges the current
// one's warps (attention_decode.cu), overlapping each item's merge and partial writes with the
// next one's first memory round trips. The same arithmetic, so the same bits, either way. On
// since session 23 (H200: the kernel 3.6% faster at 1k x 64, 2% at 8k x 16, even from 32k; the
// step at batch 64, 1k -1.4%; docs/performance.md).
inline constexpr bool kDecodePrefetch = true;

// Whether an FP8 cache's decode attention copies a tile by two bulk tensor copies (lane 0 of the
// warp, head_dim 128, blocks of 16 keys, the cache's size known) instead of 8 cp.asyncs a lane
// (attention_decode.cu, BULK). The same bits, 12% fewer instructions in the kernel, but slower on
// an H100 where the FP8 kernel reads near its copy rate (session 37: kernel +2.3% at 32k x 16,
// +3% at 128k x 4; the 32k x 16 step +1.4%), so off (PACELINE_DECODE_FP8_BULK=1): to be measured
// on an H200, where the FP8 kernel reads at 81% of the copy rate and bf16 at 100%.
inline constexpr bool kDecodeFp8Bulk = false;

// Whether an FP8 cache's decode attention loads the block-table entries of the tiles a warp
// copies kDecodeTableLead loop turns ahead (a ring of entries) instead of one (attention_decode.cu,
// LEAD). The same arithmetic, so the same bits. A warp takes a turn a tile; with one turn, each
// turn waits for an entry loaded during the turn before, one memory round trip under a saturated
// memory system, so a warp reads at most one 4 KB FP8 tile a round trip (an H100 profile at 32k x
// 16: 29% of the samples on that wait). On an H100 the kernel reads at the copy rate either way
// (session 30: two and three turns, not faster); the H200 needs about 1.5 tiles a round trip of
// each of its 12 warps an SM at 4.275 TB/s, where the FP8 kernel reads at 81% (bf16, 8 KB a tile,
// at 100%). Off (PACELINE_DECODE_FP8_TABLE_LEAD=1) until measured on an H200.
inline constexpr bool kDecodeFp8TableLead = false;
inline constexpr int kDecodeTableLead = 3;

// Whether a decode block loads its next item's q during the current item's merge (into the
// registers the accumulators leave), rather than at the next item's start, where the item's first
// math waited for it: an H100 profile of the bf16 kernel at 1k x 64 (128-key pieces, two tiles a
// warp) has 21% of its samples on that wait, FP8 at 32k x 16 5.6%. The same arithmetic, so the
// same bits. Off (PACELINE_DECODE_Q_NEXT=1) until timed.
inline constexpr bool kDecodeQNext = false;

struct DecodeSplits {
  int max_splits = 16;  // pieces per row at most (the partials' stride)
  int min_chunk = 128;  // keys per piece at least, before rounding to whole 64-key rounds
  // Long contexts: past short_splits pieces, a piece per long_chunk keys (0: no such regime, up
  // to max_splits from min_chunk alone).
  int short_splits = 0;
  int long_chunk = 0;
  // How a block takes its items, not how they are cut: the next item's first tiles before this
  // one's merge (PACELINE_DECODE_PREFETCH).
  bool prefetch = kDecodePrefetch;
  // How an FP8 cache's tiles are copied (PACELINE_DECODE_FP8_BULK).
  bool fp8_bulk = kDecodeFp8Bulk;
  // How far ahead an FP8 cache's block-table entries are loaded (PACELINE_DECODE_FP8_TABLE_LEAD:
  // kDecodeTableLead turns, or one).
  bool fp8_table_lead = kDecodeFp8TableLead;
  // When a block loads an item's q (PACELINE_DECODE_Q_NEXT: during the item before's merge).
  bool q_next = kDecodeQNext;
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
// (4 warps x 16-key tiles), never shorter than min_chunk unless the context is. With a long
// regime, at most short_splits pieces until the context has more than short_splits long_chunks,
// then one a long_chunk (at most max_splits).
PACELINE_HOST_DEVICE inline DecodeSplitPlan decode_split_plan(int ctx, DecodeSplits s) {
  if (ctx <= 0) return {0, 0};
  int n = (ctx + s.min_chunk - 1) / s.min_chunk;
  if (s.long_chunk > 0) {
    const int longs = (ctx + s.long_chunk - 1) / s.long_chunk;
    const int most = longs > s.short_splits ? longs : s.short_splits;
    if (n > most) n = most;
  }
  if (n > s.max_splits) n = s.max_splits;
  const int chunk = ((ctx + n - 1) / n + 63) / 64 * 64;
  return {(ctx + chunk - 1) / chunk, chunk};
}

// The most pieces a plan may ask for (the merge kernel's shared memory and the partials' size
// grow with it).
inline constexpr int kMaxDecodeSplits = 256;

// The executor's plans, one per cache element type (docs/performance.md, "Session 21" and
// "Session 23"). bf16: at most 16 pieces of at least 128 keys (the plan of sessions 9 to 20).
// FP8: the same up to 16k keys, then a piece per 1,024 keys up to 48, so that a long context at
// a small batch puts more blocks on the device: the FP8 kernel does about as much work a key for
// half the bytes, and with few blocks an SM its pieces are bound by that work (session 21, up to
// 32 pieces; H100 steps: 128k batch 4 -8.4%, 32k batch 1 -4.3%, batch 16 -1.9%; the same plan
// left bf16 steps within 1%). Past 32k keys up to 48 pieces (session 23): 48 x 8 KV heads = 384
// items, about the persistent grid's 396 blocks, so 128k at batch 4 fills 3.9 whole waves where
// 32 pieces left the busiest blocks 3 items against a mean of 2.6 (H200 kernel bench, 128k x 4:
// 298.6 against 321.8 us). Up to 32k the plan is session 21's.
inline constexpr DecodeSplits kDecodePlanBf16{16, 128};
inline constexpr DecodeSplits kDecodePlanFp8{48, 128, 16, 1024};

// PACELINE_DECODE_SPLITS's value, "MAX,MIN" (max_splits, min_chunk) or "MAX,MIN,SHORT,LONG"
// (and short_splits, long_chunk), for measuring other plans: nullptr (unset) or empty gives the
// plan of the cache type; anything else that is not two or four integers with 1 <= MAX <=
// kMaxDecodeSplits, 16 <= MIN <= 1048576, 1 <= SHORT <= MAX and MIN <= LONG <= 1048576 is an
// error, described in *error.
inline std::optional<DecodeSplits> decode_splits_from(const char* value, bool fp8,
                                                      std::string* error) {
  if (value == nullptr || *value == 0) return fp8 ? kDecodePlanFp8 : kDecodePlanBf16;
  // Whole decimal integers separated by commas, nothing else.
  int v[4] = {0, 0, 0, 0};
  int got = 0;
  bool ok = true;
  for (const char* p = value; ok;) {
    char* end = nullptr;
    const long x = std::strtol(p, &end, 10);
    ok = end != p && got < 4 && x >= -1 && x <= 1048576 && (*p >= '0' && *p <= '9');
    if (!ok) break;
    v[got++] = static_cast<int>(x);
    if (*end == 0) break;
    ok = *end == ',';
    p = end + 1;
  }
  DecodeSplits s{v[0], v[1], got == 4 ? v[2] : 0, got == 4 ? v[3] : 0};
  ok = ok && (got == 2 || got == 4) && s.max_splits >= 1 && s.max_splits <= kMaxDecodeSplits &&
       s.min_chunk >= 16 &&
       (got == 2 || (s.short_splits >= 1 && s.short_splits <= s.max_splits &&
                     s.long_chunk >= s.min_chunk));
  if (!ok) {
    *error = "PACELINE_DECODE_SPLITS=\"" + std::string(value) +
             "\": expected MAX,MIN or MAX,MIN,SHORT,LONG (pieces per row at most, 1 to " +
             std::to_string(kMaxDecodeSplits) +
             "; keys per piece at least, 16 to 1048576; pieces at most until the context has "
             "more than SHORT long chunks, 1 to MAX; keys of a long chunk, MIN to 1048576)";
    return std::nullopt;
  }
  return s;
}

// The value of the switch `name`: nullptr (unset) or empty gives `fallback`, "0" off, "1" on;
// anything else is an error, described in *error.
inline std::optional<bool> decode_switch_from(const char* name, const char* value, bool fallback,
                                              std::string* error) {
  if (value == nullptr || *value == 0) return fallback;
  if (value[0] == '0' && value[1] == 0) return false;
  if (value[0] == '1' && value[1] == 0) return true;
  *error = std::string(name) + "=\"" + std::string(value) + "\": expected 0 or 1";
  return std::nullopt;
}

// PACELINE_DECODE_PREFETCH's value (kDecodePrefetch when unset).
inline std::optional<bool> decode_prefetch_from(const char* value, std::string* error) {
  return decode_switch_from("PACELINE_DECODE_PREFETCH", value, kDecodePrefetch, error);
}

// PACELINE_DECODE_FP8_BULK's value (kDecodeFp8Bulk when unset).
inline std::optional<bool> decode_fp8_bulk_from(const char* value, std::string* error) {
  return decode_switch_from("PACELINE_DECODE_FP8_BULK", value, kDecodeFp8Bulk, error);
}

// PACELINE_DECODE_Q_NEXT's value (kDecodeQNext when unset).
inline std::optional<bool> decode_q_next_from(const char* value, std::string* error) {
  return decode_switch_from("PACELINE_DECODE_Q_NEXT", value, kDecodeQNext, error);
}

// PACELINE_DECODE_FP8_TABLE_LEAD's value (kDecodeFp8TableLead when unset).
inline std::optional<bool> decode_fp8_table_lead_from(const char* value, std::string* error) {
  return decode_switch_from("PACELINE_DECODE_FP8_TABLE_LEAD", value, kDecodeFp8TableLead, error);
}

}  // namespace paceline::cuda
