#include "kv/prefix_cache.h"

#include <algorithm>

#include <xxhash.h>

namespace paceline {

uint64_t hash_block(uint64_t parent_hash, std::span<const int32_t> block_tokens) {
  return XXH3_64bits_withSeed(block_tokens.data(), block_tokens.size_bytes(), parent_hash);
}

void extend_block_hashes(std::vector<uint64_t>& hashes, std::span<const int32_t> tokens,
                         int64_t block_size, int64_t max_blocks) {
  const int64_t full_blocks =
      std::min(static_cast<int64_t>(tokens.size()) / block_size, max_blocks);
  for (auto i = static_cast<int64_t>(hashes.size()); i < full_blocks; ++i) {
    const uint64_t parent = i == 0 ? kRootBlockHash : hashes[i - 1];
    hashes.push_back(hash_block(parent, tokens.subspan(i * block_size, block_size)));
  }
}

std::optional<int32_t> PrefixCache::find(uint64_t hash) const {
  auto it = blocks_.find(hash);
  if (it == blocks_.end()) return std::nullopt;
  return it->second;
}

bool PrefixCache::insert(uint64_t hash, int32_t block) {
  return blocks_.emplace(hash, block).second;
}

void PrefixCache::erase(uint64_t hash, int32_t block) {
  auto it = blocks_.find(hash);
  if (it != blocks_.end() && it->second == block) blocks_.erase(it);
}

}  // namespace paceline
