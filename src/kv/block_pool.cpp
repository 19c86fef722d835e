#include "kv/block_pool.h"

#include <algorithm>

#include "base/error.h"

namespace paceline {

BlockPool::BlockPool(int64_t num_blocks, int64_t block_size, bool ranked)
    : block_size_(block_size), ranked_(ranked) {
  if (num_blocks < 1) fail("KV cache needs at least one block (got {})", num_blocks);
  if (block_size < 1) fail("block size must be at least 1 (got {})", block_size);
  const auto n = static_cast<size_t>(num_blocks);
  ref_.assign(n, 0);
  hash_.assign(n, 0);
  hashed_.assign(n, 0);
  depth_.assign(n, 0);
  released_.assign(n, 0);
  key_.assign(n, 0);
  idle_since_.assign(n, 0);
  prev_.assign(n + 1, 0);
  next_.assign(n + 1, 0);
  prev_[n] = next_[n] = sentinel();
  for (int32_t b = 0; b < sentinel(); ++b) link_before(b, sentinel());
}

int32_t BlockPool::allocate() {
  const int32_t block = next_[sentinel()];
  if (block == sentinel()) fail("KV block pool exhausted: allocate() with no free block");
  return allocate(block);
}

int32_t BlockPool::allocate(int32_t block) {
  if (ref_.at(block) != 0) fail("KV block {} is in use: it cannot be allocated", block);
  unlink(block);
  if (hashed_[block]) {
    cache_.erase(hash_[block], block);
    hashed_[block] = 0;
  }
  ref_[block] = 1;
  return block;
}

void BlockPool::acquire(int32_t block) {
  if (ref_.at(block) == 0) unlink(block);
  ++ref_[block];
}

void BlockPool::release(int32_t block, int64_t now_ns, int64_t evict_key) {
  if (ref_.at(block) <= 0) fail("KV block {} released more often than acquired", block);
  if (--ref_[block] > 0) return;
  released_[block] = now_ns;
  idle_since_[block] = now_ns;
  key_[block] = evict_key;
  // Unhashed blocks go to the head: nothing is lost by reusing them first.
  link_before(block, hashed_[block] ? sentinel() : next_[sentinel()]);
}

bool BlockPool::publish(int32_t block, uint64_t hash, int32_t depth) {
  if (hashed_.at(block)) return false;
  if (!cache_.insert(hash, block)) return false;
  hash_[block] = hash;
  hashed_[block] = 1;
  depth_[block] = depth;
  return true;
}

void BlockPool::rerank(int32_t block, int64_t evict_key) {
  if (!ranked_ || ref_.at(block) != 0 || !hashed_[block]) return;
  by_key_.erase({key_[block], depth_[block], block});
  key_[block] = evict_key;
  by_key_.insert({evict_key, depth_[block], block});
}

void BlockPool::mark_wanted(int32_t block, int64_t evict_key) {
  if (!ranked_ || ref_.at(block) != 0 || !hashed_[block]) return;
  by_key_.erase({key_[block], depth_[block], block});
  by_idle_.erase({idle_since_[block], -depth_[block], block});
  if (idle_since_[block] == kWanted) evict_key = std::min(evict_key, key_[block]);
  key_[block] = evict_key;
  idle_since_[block] = kWanted;
  by_key_.insert({evict_key, depth_[block], block});
  by_idle_.insert({kWanted, -depth_[block], block});
}

void BlockPool::forget(int32_t block) {
  if (!hashed_.at(block)) return;
  const bool free = ref_[block] == 0;
  if (free) unlink(block);  // while still hashed, so a ranked pool forgets its key
  cache_.erase(hash_[block], block);
  hashed_[block] = 0;
  if (free) link_before(block, next_[sentinel()]);
}

int64_t BlockPool::evict_free_cached() {
  int64_t dropped = 0;
  for (int32_t b = 0; b < sentinel(); ++b) {
    if (ref_[b] != 0 || !hashed_[b]) continue;
    forget(b);
    ++dropped;
  }
  return dropped;
}

std::optional<int32_t> BlockPool::first_free() const {
  const int32_t block = next_[sentinel()];
  if (block == sentinel()) return std::nullopt;
  return block;
}

std::optional<int32_t> BlockPool::highest_ranked_free() const {
  if (by_key_.empty()) return std::nullopt;
  return std::get<2>(*by_key_.rbegin());
}

std::optional<int32_t> BlockPool::longest_idle_free() const {
  if (by_idle_.empty() || std::get<0>(*by_idle_.begin()) == kWanted) return std::nullopt;
  return std::get<2>(*by_idle_.begin());
}

std::optional<uint64_t> BlockPool::hash_of(int32_t block) const {
  if (!hashed_.at(block)) return std::nullopt;
  return hash_[block];
}

std::vector<int32_t> BlockPool::free_queue() const {
  std::vector<int32_t> out;
  for (int32_t b = next_[sentinel()]; b != sentinel(); b = next_[b]) out.push_back(b);
  return out;
}

void BlockPool::unlink(int32_t block) {
  if (ranked_ && hashed_[block]) {
    by_key_.erase({key_[block], depth_[block], block});
    by_idle_.erase({idle_since_[block], -depth_[block], block});
  }
  next_[prev_[block]] = next_[block];
  prev_[next_[block]] = prev_[block];
  --num_free_;
}

void BlockPool::link_before(int32_t block, int32_t next) {
  const int32_t prev = prev_[next];
  prev_[block] = prev;
  next_[block] = next;
  next_[prev] = block;
  prev_[next] = block;
  ++num_free_;
  if (ranked_ && hashed_[block]) {
    by_key_.insert({key_[block], depth_[block], block});
    by_idle_.insert({idle_since_[block], -depth_[block], block});
  }
}

}  // namespace paceline
