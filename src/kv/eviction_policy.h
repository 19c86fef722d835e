#pragma once
// Which cached block gives way when a fresh one is needed. Blocks that hold no hash go first under
// every policy (they hold nothing worth keeping); among cached free blocks the policy decides:
//
// - lru: the least recently freed first (vLLM, SGLang's default). When agent sessions come back
//   in a cycle and outnumber memory, the session idle longest is the one that returns next, so
//   LRU evicts exactly what is needed next: the hit rate collapses (docs/kv-tiers.md).
// - reuse: the most recently freed block goes first, its sequence's deepest block first, except
//   for two kinds of block. A block that a waiting request's prefix covers is needed now: it goes
//   after every other, the latest arrival's first (KvManager::want_prefix). A block idle longer
//   than nearly every session takes to come back (the 90th percentile of the last 64 reuse gaps,
//   each the time from a prefix's release to the arrival of the request that found at least 2
//   blocks of it) is taken
//   for dead and goes before all others, idle longest first. In a cycle of sessions this keeps a
//   stable set of whole sessions resident instead of a useless tail of every session, and gives
//   up first the sessions that paused (a user reading the answer) or ended.
// - oracle: the offline yardstick, for the simulator only. A NextUseOracle that has read the
//   trace says when each block is needed next; the block needed furthest in the future goes
//   first (Belady's rule), blocks needed by nobody first of all.
#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>

namespace paceline {

enum class KvPolicy { kLru, kReuse, kOracle };

std::optional<KvPolicy> kv_policy_from_name(std::string_view name);  // "lru" | "reuse" | "oracle"
const char* kv_policy_name(KvPolicy policy);

// What the oracle policy asks: when the block cached under `hash` is needed next.
class NextUseOracle {
 public:
  static constexpr int64_t kNever = INT64_MAX;
  virtual ~NextUseOracle() = default;
  // The earliest time a request still to come (or waiting) needs this block; kNever for none.
  virtual int64_t next_use_ns(uint64_t hash) const = 0;
  // The KV manager asks to hear of every hash whose next use changed, to re-rank its block.
  virtual void set_listener(std::function<void(uint64_t hash)> on_change) = 0;
};

// The reuse policy's estimate of how long a freed block waits for its next use.
class ReuseGapEstimate {
 public:
  // A request that found the first `blocks` blocks of its prefix cached arrived `gap_ns` after
  // the last of them was freed. A find of fewer than kMinBlocks is no session's return (a new
  // session sharing a first block of chat template with an idle one, a benchmark's warmup): it
  // is not counted, else a burst of them pulls the estimate down to milliseconds.
  void observe(int64_t gap_ns, int64_t blocks);
  // The q-quantile (0..1) of the last kWindow gaps; nullopt before the first.
  std::optional<int64_t> percentile_ns(double q) const;
  std::optional<int64_t> median_ns() const { return percentile_ns(0.5); }
  // A cached block idle this long is taken for dead: the kDeadPercentile of the gaps (never,
  // before the first gap).
  int64_t dead_after_ns() const;

  static constexpr int kWindow = 64;
  static constexpr int64_t kMinBlocks = 2;
  static constexpr double kDeadPercentile = 0.9;

 private:
  int64_t gaps_[kWindow] = {};
  int count_ = 0;
  int next_ = 0;
};

}  // namespace paceline
