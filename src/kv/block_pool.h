#pragma once
// The fixed set of KV blocks: reference counts, the prefix cache's index, and one free queue.
// A block whose count drops to 0 is free but keeps its hash, so a later request can still hit it;
// it is evicted (its hash dropped) only when a fresh block is needed. The free queue hands out
// unhashed blocks first (they hold nothing worth keeping), then hashed ones least recently freed
// first.
#include <cstdint>
#include <optional>
#include <vector>

#include "kv/prefix_cache.h"

namespace paceline {

class BlockPool {
 public:
  BlockPool(int64_t num_blocks, int64_t block_size);  // throws paceline::Error when either < 1

  int64_t num_blocks() const { return static_cast<int64_t>(ref_.size()); }
  int64_t block_size() const { return block_size_; }
  // Blocks with no reference: never used, or cached and evictable.
  int64_t num_free() const { return num_free_; }
  // Blocks known to the prefix cache, in use or free.
  int64_t num_cached() const { return cache_.size(); }

  // A fresh block with one reference and no hash; evicts the free queue's head if it was cached.
  // Precondition: num_free() > 0.
  int32_t allocate();
  // The block cached under `hash`, in use or free.
  std::optional<int32_t> find_cached(uint64_t hash) const { return cache_.find(hash); }
  // One more reference (a prefix-cache hit); a free block leaves the free queue.
  void acquire(int32_t block);
  // One reference less; at zero the block joins the free queue, at the tail when hashed.
  void release(int32_t block);
  // Caches a full block of computed tokens under `hash`. False when another block already holds
  // that hash (this one then stays unhashed) or this block already has a hash.
  bool publish(int32_t block, uint64_t hash);

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
  // Free queue as an intrusive doubly linked list; index num_blocks is the sentinel.
  std::vector<int32_t> prev_, next_;
  int64_t num_free_ = 0;
  PrefixCache cache_;
};

}  // namespace paceline
