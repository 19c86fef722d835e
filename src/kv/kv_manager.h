#pragma once
// The KV manager: what the scheduler asks of the KV cache. It hands each sequence the blocks its
// tokens need, finds the longest cached prefix of a new sequence, publishes blocks once they are
// full of computed tokens, and takes everything back on free.
//
// The last block is never a hit: a prefix hit covers at most the full blocks before the one that
// holds the sequence's last token, so a prefill always computes at least one token (it needs the
// last token's logits). When a block-aligned prompt is cached in full, its whole last block is
// recomputed (up to block_size tokens) rather than copying the block to recompute one token; vLLM
// behaves the same, since its hits are whole blocks too.
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "base/clock.h"
#include "kv/block_pool.h"
#include "kv/block_table.h"
#include "kv/eviction_policy.h"

namespace paceline {

struct KvConfig {
  int64_t num_blocks = 0;
  int64_t block_size = 16;
  bool enable_prefix_caching = true;
  KvPolicy policy = KvPolicy::kLru;  // which cached block gives way (eviction_policy.h)
  // Blocks of the host-memory tier (--kv-offloading-size); 0: no tier. A cached block that
  // gives way on the GPU is stored there, and a prefix that continues there is loaded back.
  int64_t num_host_blocks = 0;
  // --kv-offloading-max-blocks-per-step: the most blocks one forward copies in either direction
  // for admissions; an admission's blocks beyond it are taken (and loaded or stored) over the
  // next steps (continue_allocation). 0: no cap. Blocks a running sequence grows by are never
  // held back.
  int64_t max_copy_blocks_per_step = 0;
};

// Cached blocks found for a sequence's prefix: not yet taken; allocate_for takes them.
struct PrefixHit {
  std::vector<int32_t> blocks;       // on the GPU
  std::vector<int32_t> host_blocks;  // the prefix's continuation in the host tier, in order
  int64_t num_tokens = 0;            // (blocks + host_blocks) * block_size
  int64_t num_query_tokens = 0;      // length of the sequence that was probed
};

// Totals for metrics, in tokens (blocks for the transfers), counted once per admission.
struct KvStats {
  int64_t prefix_queries = 0;  // tokens of admitted sequences that probed the cache
  int64_t prefix_hits = 0;     // of those, tokens served from the cache (either tier)
  int64_t host_hits = 0;       // of the hits, tokens loaded back from the host tier
  int64_t stored_blocks = 0;   // GPU blocks copied to the host tier as they gave way
  int64_t loaded_blocks = 0;   // host blocks copied back
  int64_t load_failures = 0;   // host blocks whose load failed (not counted in loaded_blocks)
};

// One block copied between the tiers.
struct BlockCopy {
  int32_t gpu_block = 0;
  int32_t host_block = 0;
  bool operator==(const BlockCopy&) const = default;
};

// The copies the next forward must make, stores before loads, both before it computes: a store
// saves a block that a load or the forward is about to overwrite.
struct KvTransfers {
  std::vector<BlockCopy> stores;  // GPU -> host
  std::vector<BlockCopy> loads;   // host -> GPU
  bool empty() const { return stores.empty() && loads.empty(); }
};

class KvManager {
 public:
  // Throws paceline::Error on a bad config. The clock (release times for the reuse policy) must
  // outlive the manager; without one every block is freed at time 0.
  explicit KvManager(const KvConfig& config, const Clock* clock = nullptr);

  // The oracle policy's source of next uses; must outlive the manager. Required by that policy
  // before the first allocation, ignored by the others.
  void set_oracle(NextUseOracle* oracle);

  const KvConfig& config() const { return config_; }
  int64_t block_size() const { return config_.block_size; }
  int64_t num_blocks() const { return pool_.num_blocks(); }
  int64_t num_free_blocks() const { return pool_.num_free(); }
  // Used (or reserved) blocks / total blocks; cached-but-free blocks count as free.
  double usage() const;
  const KvStats& stats() const { return stats_; }
  const BlockPool& pool() const { return pool_; }
  // The host tier's pool; null without one.
  const BlockPool* host_pool() const { return host_.get(); }

  // The copies planned since the last call, for the forward being planned; the host blocks they
  // load from stay pinned until release_transfer_pins(). Copies planned while no forward takes
  // them (a pass that planned no row) wait for the next one: nothing writes a block before the
  // forward that carries its copies, and within it the copies go first.
  KvTransfers take_transfers();
  // The forward that made the copies is over (done or failed): their host blocks may give way.
  void release_transfer_pins();
  // Loads of the last forward that did not land: their host blocks forget their hashes (what
  // they hold is suspect, and no later prefix finds them), counted as failures, not as loads.
  void forget_failed_loads(std::span<const BlockCopy> failed);
  // A request's prefix hit shrank by `num_tokens` host-tier tokens (their loads failed): they
  // are recomputed, no longer hits. The loads of `seq` not yet planned are not made either: its
  // reserved blocks come fresh.
  void uncount_host_hit(BlockTable& seq, int64_t num_tokens);
  // The eviction key of a host block whose content the GPU holds too: the highest, first to go.
  static constexpr int64_t kRedundantKey = INT64_MAX;

  // The longest run of cached full blocks at the start of `tokens`, excluding the block that holds
  // the last token. Empty when caching is off or `seq` already has blocks. Extends seq.hashes.
  PrefixHit find_cached_prefix(BlockTable& seq, std::span<const int32_t> tokens);
  // Whether a prefix hit of at least num_blocks blocks is possible for a fresh `seq`: the prompt
  // has that many cacheable blocks and the last of them is resident in either tier. One lookup
  // where find_cached_prefix walks the whole prefix; false rules the hit out, true promises
  // nothing (a block before it may be gone).
  bool may_hit_blocks(BlockTable& seq, std::span<const int32_t> tokens, int64_t num_blocks);

  // A request for `tokens` has arrived and waits: under the reuse policy its resident prefix
  // (both tiers) is needed now, so those blocks give way after every idle one and are never
  // taken for dead while it waits. The time since the prefix was released is a reuse gap.
  // Extends seq.hashes; nothing when `seq` already has blocks.
  void want_prefix(BlockTable& seq, std::span<const int32_t> tokens, int64_t arrival_ns);
  // The waiting request whose prefix hashes `seq` holds is gone (cancelled): its prefix's blocks
  // that are still wanted are idle again, since their release. (Another waiting request that
  // wants the same blocks loses their protection too: wants are not counted.)
  void unwant_prefix(const BlockTable& seq);
  // How far below the clock a wanted block's key lies: below every idle block's release time.
  static constexpr int64_t kWantedOffsetNs = int64_t{1} << 60;

  // How many free blocks covering positions [0, num_tokens) would take: fresh blocks, plus hit
  // blocks that are free now (a hit on a free block takes it out of the free queue).
  int64_t free_blocks_needed(const BlockTable& seq, int64_t num_tokens,
                             const PrefixHit& hit = {}) const;
  // Whether allocate_for would succeed now.
  bool can_allocate(const BlockTable& seq, int64_t num_tokens, const PrefixHit& hit = {}) const;
  // Grows `seq` to cover positions [0, num_tokens): first the hit's blocks (only when `seq` is
  // empty), then fresh ones. All or nothing: false leaves everything unchanged. An admission
  // (`capped`) takes fresh blocks only while this step's copies stay under the copy budget and
  // holds the rest in reserve (seq.complete() is then false); `seq` must be complete.
  [[nodiscard]] bool allocate_for(BlockTable& seq, int64_t num_tokens, const PrefixHit& hit = {},
                                  bool capped = false);
  // Takes more of `seq`'s reserve, while this step's copies stay under the budget (or all of
  // it, uncapped). Returns the blocks loaded from the host tier: their tokens are now cached.
  int64_t continue_allocation(BlockTable& seq, bool capped = true);
  // Blocks admissions hold in reserve: as good as in use for every other allocation.
  int64_t num_reserved_blocks() const { return reserved_; }
  // Publishes the blocks of `seq` that are now full of computed tokens: positions
  // [0, num_computed_tokens) hold KV for tokens[0, num_computed_tokens).
  void cache_computed_blocks(BlockTable& seq, std::span<const int32_t> tokens,
                             int64_t num_computed_tokens);
  // Forgets every cached block not in use, in both tiers (BlockPool::evict_free_cached): later
  // requests find no prefix but those of requests still running. Returns the blocks dropped.
  int64_t reset_prefix_cache();
  // Releases every block of `seq`, last block first, so that a sequence's tail is evicted before
  // the prefix it shares with others. Keeps seq.hashes.
  void free(BlockTable& seq);

 private:
  int64_t num_new_blocks(const BlockTable& seq, int64_t num_tokens, const PrefixHit& hit) const;
  int64_t blocks_for(int64_t num_tokens) const {
    return (num_tokens + config_.block_size - 1) / config_.block_size;
  }
  int64_t now_ns() const { return clock_ ? clock_->now_ns() : 0; }
  // A fresh block, evicting the cached block the policy gives up (stored to the host tier first).
  int32_t take_fresh_block();
  // Takes reserved blocks of `seq` (loading the pending ones); returns the loads planned.
  int64_t take_reserved(BlockTable& seq, bool capped);
  // Whether this step's copies have reached the budget.
  bool copy_budget_spent() const;
  void unpin_pending_loads(BlockTable& seq);
  int32_t pick_victim(const BlockPool& pool) const;
  void store_to_host(int32_t gpu_block);
  // A request found `block`, the last of the `num_blocks` resident blocks of its prefix, at
  // `at_ns`: a reuse gap, unless the block is in use or was already wanted.
  void observe_return(const BlockPool& pool, int32_t block, int64_t at_ns, int64_t num_blocks);
  // The eviction key of a block about to be freed at `released_ns` (higher goes first).
  int64_t evict_key(int32_t block, int64_t released_ns) const;

  KvConfig config_;
  const Clock* clock_;
  BlockPool pool_;
  KvStats stats_;
  ReuseGapEstimate gaps_;
  NextUseOracle* oracle_ = nullptr;
  std::unique_ptr<BlockPool> host_;
  KvTransfers pending_;
  std::vector<int32_t> pinned_host_;     // read by the loads in pending_
  std::vector<int32_t> in_flight_pins_;  // read by the loads take_transfers() handed out
  int64_t reserved_ = 0;
};

}  // namespace paceline
