#include "exec/cpu/kv_cache.h"

#include <algorithm>

#include "base/error.h"

namespace paceline {

PagedKvCache::PagedKvCache(int64_t num_layers, KvCacheShape shape, int64_t kv_heads,
                           int64_t head_dim)
    : shape_(shape), slot_width_(kv_heads * head_dim) {
  if (shape.num_blocks <= 0 || shape.block_size <= 0) {
    fail("KV cache needs num_blocks > 0 and block_size > 0, got {} blocks of {}", shape.num_blocks,
         shape.block_size);
  }
  size_t floats = static_cast<size_t>(num_slots() * slot_width_);
  keys_.assign(static_cast<size_t>(num_layers), std::vector<float>(floats, 0.0f));
  values_.assign(static_cast<size_t>(num_layers), std::vector<float>(floats, 0.0f));
}

void PagedKvCache::check_block_table(std::span<const int32_t> block_table, int64_t num_positions,
                                     uint64_t who) const {
  int64_t needed = (num_positions + shape_.block_size - 1) / shape_.block_size;
  if (static_cast<int64_t>(block_table.size()) < needed) {
    fail("request {}: block table has {} blocks, {} positions need {}", who, block_table.size(),
         num_positions, needed);
  }
  for (int64_t i = 0; i < needed; ++i) {
    if (block_table[i] < 0 || block_table[i] >= shape_.num_blocks) {
      fail("request {}: block table entry {} is block {}, the cache has {}", who, i, block_table[i],
           shape_.num_blocks);
    }
  }
}

void PagedKvCache::copy_block_to(int32_t from, PagedKvCache& dst, int32_t to) const {
  if (from < 0 || from >= shape_.num_blocks || to < 0 || to >= dst.shape_.num_blocks) {
    fail("KV block copy {} -> {} is outside the caches ({} and {} blocks)", from, to,
         shape_.num_blocks, dst.shape_.num_blocks);
  }
  const auto width = static_cast<size_t>(shape_.block_size * slot_width_);
  const auto src_at = static_cast<size_t>(from) * width;
  const auto dst_at = static_cast<size_t>(to) * width;
  for (size_t layer = 0; layer < keys_.size(); ++layer) {
    std::copy_n(keys_[layer].data() + src_at, width, dst.keys_[layer].data() + dst_at);
    std::copy_n(values_[layer].data() + src_at, width, dst.values_[layer].data() + dst_at);
  }
}

}  // namespace paceline
