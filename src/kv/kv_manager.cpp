#include "kv/kv_manager.h"

#include <algorithm>

#include "base/error.h"
#include "kv/prefix_cache.h"

namespace paceline {

KvManager::KvManager(const KvConfig& config)
    : config_(config), pool_(config.num_blocks, config.block_size) {}

double KvManager::usage() const {
  return static_cast<double>(pool_.num_blocks() - pool_.num_free()) /
         static_cast<double>(pool_.num_blocks());
}

PrefixHit KvManager::find_cached_prefix(BlockTable& seq, std::span<const int32_t> tokens) {
  PrefixHit hit;
  hit.num_query_tokens = static_cast<int64_t>(tokens.size());
  if (!config_.enable_prefix_caching || !seq.empty() || tokens.empty()) return hit;
  // Full blocks strictly before the one holding the last token.
  const int64_t max_blocks = (static_cast<int64_t>(tokens.size()) - 1) / config_.block_size;
  extend_block_hashes(seq.hashes, tokens, config_.block_size, max_blocks);
  for (int64_t i = 0; i < max_blocks; ++i) {
    auto block = pool_.find_cached(seq.hashes[i]);
    if (!block) break;
    hit.blocks.push_back(*block);
  }
  hit.num_tokens = static_cast<int64_t>(hit.blocks.size()) * config_.block_size;
  return hit;
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
  return free_blocks_needed(seq, num_tokens, hit) <= pool_.num_free();
}

bool KvManager::allocate_for(BlockTable& seq, int64_t num_tokens, const PrefixHit& hit) {
  if (!can_allocate(seq, num_tokens, hit)) return false;
  const int64_t fresh = num_new_blocks(seq, num_tokens, hit);
  if (seq.empty()) {
    for (int32_t b : hit.blocks) {
      pool_.acquire(b);
      seq.ids.push_back(b);
    }
    seq.num_published = static_cast<int64_t>(hit.blocks.size());
    if (config_.enable_prefix_caching) {
      stats_.prefix_queries += hit.num_query_tokens;
      stats_.prefix_hits += hit.num_tokens;
    }
  }
  for (int64_t i = 0; i < fresh; ++i) seq.ids.push_back(pool_.allocate());
  return true;
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
  for (int64_t i = seq.num_published; i < full; ++i) pool_.publish(seq.ids[i], seq.hashes[i]);
  seq.num_published = full;
}

void KvManager::free(BlockTable& seq) {
  for (auto it = seq.ids.rbegin(); it != seq.ids.rend(); ++it) pool_.release(*it);
  seq.ids.clear();
  seq.num_published = 0;
}

}  // namespace paceline
