#include "kv/kv_manager.h"

#include <algorithm>
#include <utility>

#include "base/error.h"
#include "kv/prefix_cache.h"

namespace paceline {

KvManager::KvManager(const KvConfig& config, const Clock* clock)
    : config_(config),
      clock_(clock),
      pool_(config.num_blocks, config.block_size, config.policy != KvPolicy::kLru) {
  if (config.num_host_blocks < 0) fail("the host KV tier cannot hold {} blocks", config.num_host_blocks);
  if (config.num_host_blocks > 0) {
    host_ = std::make_unique<BlockPool>(config.num_host_blocks, config.block_size,
                                        config.policy != KvPolicy::kLru);
  }
}

void KvManager::set_oracle(NextUseOracle* oracle) {
  oracle_ = oracle;
  if (!oracle_) return;
  oracle_->set_listener([this](uint64_t hash) {
    if (auto block = pool_.find_cached(hash)) pool_.rerank(*block, oracle_->next_use_ns(hash));
    if (!host_) return;
    // A host copy of a block the GPU holds stays ranked redundant (release_transfer_pins).
    if (pool_.find_cached(hash)) return;
    if (auto block = host_->find_cached(hash)) host_->rerank(*block, oracle_->next_use_ns(hash));
  });
}

double KvManager::usage() const {
  return static_cast<double>(pool_.num_blocks() - pool_.num_free() + reserved_) /
         static_cast<double>(pool_.num_blocks());
}

PrefixHit KvManager::find_cached_prefix(BlockTable& seq, std::span<const int32_t> tokens) {
  PrefixHit hit;
  hit.num_query_tokens = static_cast<int64_t>(tokens.size());
  if (!config_.enable_prefix_caching || !seq.empty() || tokens.empty()) return hit;
  // Full blocks strictly before the one holding the last token.
  const int64_t max_blocks = (static_cast<int64_t>(tokens.size()) - 1) / config_.block_size;
  extend_block_hashes(seq.hashes, tokens, config_.block_size, max_blocks);
  int64_t i = 0;
  for (; i < max_blocks; ++i) {
    auto block = pool_.find_cached(seq.hashes[i]);
    if (!block) break;
    hit.blocks.push_back(*block);
  }
  for (; host_ && i < max_blocks; ++i) {  // where the GPU's run ends, the host's may go on
    auto block = host_->find_cached(seq.hashes[i]);
    if (!block) break;
    hit.host_blocks.push_back(*block);
  }
  hit.num_tokens =
      static_cast<int64_t>(hit.blocks.size() + hit.host_blocks.size()) * config_.block_size;
  return hit;
}

bool KvManager::may_hit_blocks(BlockTable& seq, std::span<const int32_t> tokens,
                               int64_t num_blocks) {
  if (num_blocks < 1) return true;
  if (!config_.enable_prefix_caching || !seq.empty() || tokens.empty()) return false;
  const int64_t max_blocks = (static_cast<int64_t>(tokens.size()) - 1) / config_.block_size;
  if (num_blocks > max_blocks) return false;
  extend_block_hashes(seq.hashes, tokens, config_.block_size, max_blocks);
  const uint64_t last = seq.hashes[static_cast<size_t>(num_blocks - 1)];
  return pool_.find_cached(last).has_value() || (host_ && host_->find_cached(last).has_value());
}

int64_t KvManager::num_new_blocks(const BlockTable& seq, int64_t num_tokens,
                                  const PrefixHit& hit) const {
  const int64_t have = static_cast<int64_t>(seq.ids.size()) +
                       (seq.empty() ? static_cast<int64_t>(hit.blocks.size()) : 0);
  return std::max<int64_t>(0, blocks_for(num_tokens) - have);
}

int64_t KvManager::free_blocks_needed(const BlockTable& seq, int64_t num_tokens,
                                      const PrefixHit& hit) const {
  int64_t needed = num_new_blocks(seq, num_tokens, hit);
  if (seq.empty()) {
    for (int32_t b : hit.blocks) needed += pool_.ref_count(b) == 0 ? 1 : 0;
  }
  return needed;
}

bool KvManager::can_allocate(const BlockTable& seq, int64_t num_tokens,
                             const PrefixHit& hit) const {
  return free_blocks_needed(seq, num_tokens, hit) <= pool_.num_free() - reserved_;
}

bool KvManager::allocate_for(BlockTable& seq, int64_t num_tokens, const PrefixHit& hit,
                             bool capped) {
  if (!seq.complete()) fail("KV allocation for a sequence still holding blocks in reserve");
  if (!can_allocate(seq, num_tokens, hit)) return false;
  const int64_t fresh = num_new_blocks(seq, num_tokens, hit);
  if (seq.empty()) {
    // Pinned first: the stores of this allocation's evictions must not take them. Loaded in
    // order: the last one is at the front.
    seq.pending_loads.assign(hit.host_blocks.rbegin(), hit.host_blocks.rend());
    for (int32_t b : hit.host_blocks) host_->acquire(b);
    if (!hit.blocks.empty()) {
      observe_return(pool_, hit.blocks.back(), now_ns(),
                     static_cast<int64_t>(hit.blocks.size() + hit.host_blocks.size()));
    }
    for (int32_t b : hit.blocks) {
      pool_.acquire(b);
      seq.ids.push_back(b);
    }
    seq.num_published = static_cast<int64_t>(hit.blocks.size());
    if (config_.enable_prefix_caching) {
      stats_.prefix_queries += hit.num_query_tokens;
      stats_.prefix_hits += hit.num_tokens;
      stats_.host_hits += static_cast<int64_t>(hit.host_blocks.size()) * config_.block_size;
    }
  }
  seq.num_reserved = fresh;
  reserved_ += fresh;
  take_reserved(seq, capped);
  return true;
}

int64_t KvManager::continue_allocation(BlockTable& seq, bool capped) {
  return take_reserved(seq, capped);
}

bool KvManager::copy_budget_spent() const {
  const int64_t cap = config_.max_copy_blocks_per_step;
  return cap > 0 &&
         static_cast<int64_t>(std::max(pending_.stores.size(), pending_.loads.size())) >= cap;
}

int64_t KvManager::take_reserved(BlockTable& seq, bool capped) {
  int64_t loads = 0;
  // Each block adds at most one copy each way (its load, the store of what it evicts).
  while (seq.num_reserved > 0 && !(capped && copy_budget_spent())) {
    --seq.num_reserved;
    --reserved_;
    const int32_t b = take_fresh_block();
    seq.ids.push_back(b);
    if (seq.pending_loads.empty()) continue;
    const int32_t h = seq.pending_loads.back();
    seq.pending_loads.pop_back();
    pending_.loads.push_back({b, h});
    pinned_host_.push_back(h);
    ++stats_.loaded_blocks;
    ++loads;
  }
  return loads;
}

KvTransfers KvManager::take_transfers() {
  in_flight_pins_.insert(in_flight_pins_.end(), pinned_host_.begin(), pinned_host_.end());
  pinned_host_.clear();
  return std::exchange(pending_, {});
}

// A host block that a forward has loaded into the GPU is redundant while the GPU holds the block:
// under a ranked policy it gives way first, so the two tiers hold different blocks (an exclusive
// hierarchy, 1.5M tokens instead of the GPU's 0.8M plus copies of the same). If the GPU's block
// gives way while the host copy is still there, store_to_host ranks the copy again.
void KvManager::release_transfer_pins() {
  const bool demote = config_.policy != KvPolicy::kLru;
  for (int32_t b : in_flight_pins_) {
    host_->release(b, host_->released_ns(b), demote ? kRedundantKey : host_->evict_key(b));
  }
  in_flight_pins_.clear();
}

void KvManager::forget_failed_loads(std::span<const BlockCopy> failed) {
  for (const BlockCopy& c : failed) {
    if (!host_) fail("a load from a host KV tier that does not exist failed");
    host_->forget(c.host_block);
  }
  stats_.load_failures += static_cast<int64_t>(failed.size());
  stats_.loaded_blocks -= static_cast<int64_t>(failed.size());
}

void KvManager::uncount_host_hit(BlockTable& seq, int64_t num_tokens) {
  stats_.prefix_hits -= num_tokens;
  stats_.host_hits -= num_tokens;
  unpin_pending_loads(seq);
}

void KvManager::unpin_pending_loads(BlockTable& seq) {
  for (int32_t h : seq.pending_loads) {  // never loaded: as they were
    host_->release(h, host_->released_ns(h), host_->evict_key(h));
  }
  seq.pending_loads.clear();
}

int32_t KvManager::take_fresh_block() {
  if (!pool_.first_free()) fail("KV block pool exhausted: no free block");
  const int32_t victim = pick_victim(pool_);
  if (host_ && pool_.is_cached(victim)) store_to_host(victim);
  return pool_.allocate(victim);
}

// The free block of `pool` to give way: an unhashed one when there is one, else the policy's.
int32_t KvManager::pick_victim(const BlockPool& pool) const {
  const int32_t head = *pool.first_free();
  if (!pool.is_cached(head) || config_.policy == KvPolicy::kLru) return head;
  if (config_.policy == KvPolicy::kOracle && !oracle_) {
    fail("the oracle KV policy needs a next-use oracle (paceline sim only)");
  }
  const int32_t ranked = *pool.highest_ranked_free();
  if (config_.policy != KvPolicy::kReuse || pool.evict_key(ranked) == kRedundantKey) return ranked;
  const std::optional<int32_t> idle = pool.longest_idle_free();
  if (idle && now_ns() - pool.released_ns(*idle) > gaps_.dead_after_ns()) {
    return *idle;  // idle far longer than sessions take to come back, and nobody waits for it
  }
  return ranked;
}

void KvManager::observe_return(const BlockPool& pool, int32_t block, int64_t at_ns,
                               int64_t num_blocks) {
  if (!pool.is_free(block) || pool.is_wanted(block)) return;
  // The session came back this long after its prefix was last let go: a reuse gap (when it
  // found enough of its prefix to be a session's return).
  gaps_.observe(at_ns - pool.released_ns(block), num_blocks);
}

void KvManager::want_prefix(BlockTable& seq, std::span<const int32_t> tokens, int64_t arrival_ns) {
  if (config_.policy != KvPolicy::kReuse || !config_.enable_prefix_caching || !seq.empty() ||
      tokens.empty()) {
    return;
  }
  const int64_t max_blocks = (static_cast<int64_t>(tokens.size()) - 1) / config_.block_size;
  extend_block_hashes(seq.hashes, tokens, config_.block_size, max_blocks);
  // Below every idle block's key (a release time), in arrival order: the latest comer gives way
  // first, as it would be admitted last.
  const int64_t key = arrival_ns - kWantedOffsetNs;
  std::vector<std::pair<BlockPool*, int32_t>> run;
  BlockPool* tier = &pool_;
  for (int64_t i = 0; i < max_blocks; ++i) {
    std::optional<int32_t> block = tier->find_cached(seq.hashes[i]);
    if (!block && tier == &pool_ && host_) {
      tier = host_.get();  // where the GPU's run ends, the host's may go on
      block = tier->find_cached(seq.hashes[i]);
    }
    if (!block) break;
    run.emplace_back(tier, *block);
  }
  if (run.empty()) return;
  observe_return(*run.back().first, run.back().second, arrival_ns,
                 static_cast<int64_t>(run.size()));
  for (auto [pool, block] : run) pool->mark_wanted(block, key);
}

void KvManager::unwant_prefix(const BlockTable& seq) {
  if (config_.policy != KvPolicy::kReuse || !seq.empty()) return;
  for (uint64_t hash : seq.hashes) {
    for (BlockPool* tier : {&pool_, host_.get()}) {
      if (!tier) continue;
      const std::optional<int32_t> block = tier->find_cached(hash);
      if (!block || !tier->is_free(*block) || !tier->is_wanted(*block)) continue;
      tier->acquire(*block);  // released again at its old time, under the reuse key of that time
      tier->release(*block, tier->released_ns(*block), tier->released_ns(*block));
    }
  }
}

// A cached block leaving the GPU keeps its place in the host tier (ranked as it was), unless the
// tier has it already or every host block is pinned by a load.
void KvManager::store_to_host(int32_t gpu_block) {
  const uint64_t hash = *pool_.hash_of(gpu_block);
  if (auto kept = host_->find_cached(hash)) {
    // The bytes are there already (a copy the GPU's block was loaded from): no copy, but that
    // copy, ranked redundant while the GPU held the block, takes the GPU block's place now.
    if (host_->is_free(*kept) && config_.policy != KvPolicy::kLru) {
      host_->acquire(*kept);
      host_->release(*kept, pool_.released_ns(gpu_block), pool_.evict_key(gpu_block));
      if (pool_.is_wanted(gpu_block)) host_->mark_wanted(*kept, pool_.evict_key(gpu_block));
    }
    return;
  }
  if (!host_->first_free()) return;
  const int32_t h = host_->allocate(pick_victim(*host_));
  host_->publish(h, hash, pool_.depth(gpu_block));
  host_->release(h, pool_.released_ns(gpu_block), pool_.evict_key(gpu_block));
  if (pool_.is_wanted(gpu_block)) host_->mark_wanted(h, pool_.evict_key(gpu_block));
  pending_.stores.push_back({gpu_block, h});
  ++stats_.stored_blocks;
}

int64_t KvManager::evict_key(int32_t block, int64_t released_ns) const {
  switch (config_.policy) {
    case KvPolicy::kLru:
      return 0;
    case KvPolicy::kReuse:
      // The release time: most recently freed first. Per-sequence gaps (the last gap each
      // showed) measured no better in the simulator (docs/kv-tiers.md).
      return released_ns;
    case KvPolicy::kOracle: {
      const std::optional<uint64_t> hash = pool_.hash_of(block);
      return hash && oracle_ ? oracle_->next_use_ns(*hash) : NextUseOracle::kNever;
    }
  }
  return 0;
}

void KvManager::cache_computed_blocks(BlockTable& seq, std::span<const int32_t> tokens,
                                      int64_t num_computed_tokens) {
  if (!config_.enable_prefix_caching) return;
  num_computed_tokens = std::min(num_computed_tokens, static_cast<int64_t>(tokens.size()));
  const int64_t full =
      std::min(num_computed_tokens / config_.block_size, static_cast<int64_t>(seq.ids.size()));
  if (full <= seq.num_published) return;
  extend_block_hashes(seq.hashes, tokens.first(static_cast<size_t>(num_computed_tokens)),
                      config_.block_size, full);
  for (int64_t i = seq.num_published; i < full; ++i) {
    pool_.publish(seq.ids[i], seq.hashes[i], static_cast<int32_t>(i));
  }
  seq.num_published = full;
}

int64_t KvManager::reset_prefix_cache() {
  int64_t dropped = pool_.evict_free_cached();
  if (host_) dropped += host_->evict_free_cached();
  return dropped;
}

// One release time for the whole sequence: a clock read per block would, on a clock that moves
// meanwhile (the serving engine's), key the head above the tail and so evict it first.
void KvManager::free(BlockTable& seq) {
  const int64_t now = now_ns();
  unpin_pending_loads(seq);
  reserved_ -= seq.num_reserved;
  seq.num_reserved = 0;
  for (auto it = seq.ids.rbegin(); it != seq.ids.rend(); ++it) {
    pool_.release(*it, now, pool_.ref_count(*it) == 1 ? evict_key(*it, now) : 0);
  }
  seq.ids.clear();
  seq.num_published = 0;
}

}  // namespace paceline
