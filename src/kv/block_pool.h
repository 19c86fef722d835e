#pragma once
// The fixed set of KV blocks: reference counts, the prefix cache's index, and one free queue.
// A block whose count drops to 0 is free but keeps its hash, so a later request can still hit it;
// it is evicted (its hash dropped) only when a fresh block is needed. The free queue hands out
// unhashed blocks first (they hold nothing worth keeping), then hashed ones least recently freed
// first. A ranked pool also orders its free cached blocks by an eviction key that the KV
// manager's policy gives each (eviction_policy.h), so that the policy can take the block with
// the highest key instead of the queue's head, and by how long each has been idle, so that the
// policy can also find the block idle longest among those no waiting request wants.
#include <cstdint>
#include <optional>
#include <set>
#include <tuple>
#include <vector>

#include "kv/prefix_cache.h"

namespace paceline {

class BlockPool {
 public:
  // Throws paceline::Error when either count is < 1.
  BlockPool(int64_t num_blocks, int64_t block_size, bool ranked = false);

  int64_t num_blocks() const { return static_cast<int64_t>(ref_.size()); }
  int64_t block_size() const { return block_size_; }
  // Blocks with no reference: never used, or cached and evictable.
  int64_t num_free() const { return num_free_; }
  // Blocks known to the prefix cache, in use or free.
  int64_t num_cached() const { return cache_.size(); }

  // A fresh block with one reference and no hash; evicts the free queue's head if it was cached.
  // Precondition: num_free() > 0.
  int32_t allocate();
  // Takes this free block as a fresh one (evicting its hash), whatever its place in the queue.
  int32_t allocate(int32_t block);
  // The block cached under `hash`, in use or free.
  std::optional<int32_t> find_cached(uint64_t hash) const { return cache_.find(hash); }
  // One more reference (a prefix-cache hit); a free block leaves the free queue.
  void acquire(int32_t block);
  // One reference less; at zero the block joins the free queue, at the tail when hashed, and a
  // ranked pool files it under `evict_key`. `now_ns` is kept as the block's release time.
  void release(int32_t block, int64_t now_ns = 0, int64_t evict_key = 0);
  // Caches a full block of computed tokens under `hash`; `depth` is its index in the sequence
  // (ties of the eviction key go deepest first). False when another block already holds that
  // hash (this one then stays unhashed) or this block already has a hash.
  bool publish(int32_t block, uint64_t hash, int32_t depth = 0);
  // Files a free cached block of a ranked pool under a new key; nothing for any other block.
  void rerank(int32_t block, int64_t evict_key);
  // A waiting request needs this free cached block of a ranked pool: it is filed under
  // `evict_key` (the lower of two, when two requests want it) and is no longer idle
  // (longest_idle_free skips it) until it is released again. Nothing for any other block.
  void mark_wanted(int32_t block, int64_t evict_key);
  // Drops the hash of `block`, in use or free (a free one moves to the head of the free queue,
  // as an unhashed block): what it holds can no longer be found. Nothing for an unhashed block.
  void forget(int32_t block);
  // Drops the hash of every free cached block (they move to the head of the free queue, as
  // unhashed blocks); blocks in use keep theirs, so the requests holding them lose nothing.
  // Returns how many were dropped. For POST /reset_prefix_cache.
  int64_t evict_free_cached();

  // The free queue's head: an unhashed block when there is one, else the cached block freed
  // longest ago; nullopt when nothing is free.
  std::optional<int32_t> first_free() const;
  bool is_free(int32_t block) const { return ref_.at(block) == 0; }
  bool is_cached(int32_t block) const { return hashed_.at(block) != 0; }
  // A ranked pool's free cached block with the highest key (deepest first among equal keys).
  std::optional<int32_t> highest_ranked_free() const;
  // A ranked pool's free cached block released longest ago that no waiting request wants
  // (deepest first among equal release times).
  std::optional<int32_t> longest_idle_free() const;
  bool is_wanted(int32_t block) const { return idle_since_.at(block) == kWanted; }
  int64_t released_ns(int32_t block) const { return released_.at(block); }
  int32_t depth(int32_t block) const { return depth_.at(block); }
  int64_t evict_key(int32_t block) const { return key_.at(block); }
  int32_t ref_count(int32_t block) const { return ref_.at(block); }
  std::optional<uint64_t> hash_of(int32_t block) const;
  // The free queue, next to be handed out first.
  std::vector<int32_t> free_queue() const;

 private:
  void unlink(int32_t block);
  void link_before(int32_t block, int32_t next);
  int32_t sentinel() const { return static_cast<int32_t>(ref_.size()); }

  int64_t block_size_;
  std::vector<int32_t> ref_;
  std::vector<uint64_t> hash_;
  std::vector<uint8_t> hashed_;
  std::vector<int32_t> depth_;
  std::vector<int64_t> released_;
  std::vector<int64_t> key_;
  std::vector<int64_t> idle_since_;  // the release time, or kWanted
  bool ranked_ = false;
  static constexpr int64_t kWanted = INT64_MAX;
  // Free cached blocks of a ranked pool by (key, depth, block): the last entry goes first.
  std::set<std::tuple<int64_t, int32_t, int32_t>> by_key_;
  // The same blocks by (idle since, -depth, block): the first entry is idle longest (its
  // sequence's deepest block first, as the free queue has it); wanted ones last.
  std::set<std::tuple<int64_t, int32_t, int32_t>> by_idle_;
  // Free queue as an intrusive doubly linked list; index num_blocks is the sentinel.
  std::vector<int32_t> prev_, next_;
  int64_t num_free_ = 0;
  PrefixCache cache_;
};

}  // namespace paceline
