#pragma once
// Paged KV cache storage for the CPU forward. Per layer, K and V are each one float32 array laid
// out [num_blocks][block_size][kv_heads][head_dim]; a "slot" is block * block_size + offset, so
// position p of a sequence lives in slot block_table[p / block_size] * block_size +
// p % block_size. Which blocks a sequence owns is the scheduler's business, not this class's.
#include <cstdint>
#include <span>
#include <vector>

#include "exec/executor.h"

namespace paceline {

class PagedKvCache {
 public:
  PagedKvCache(int64_t num_layers, KvCacheShape shape, int64_t kv_heads, int64_t head_dim);

  KvCacheShape shape() const { return shape_; }
  int64_t num_slots() const { return shape_.num_blocks * shape_.block_size; }
  // Floats per slot: kv_heads * head_dim.
  int64_t slot_width() const { return slot_width_; }

  float* key(int64_t layer, int64_t slot) { return keys_[layer].data() + slot * slot_width_; }
  float* value(int64_t layer, int64_t slot) { return values_[layer].data() + slot * slot_width_; }
  const float* key(int64_t layer, int64_t slot) const {
    return keys_[layer].data() + slot * slot_width_;
  }
  const float* value(int64_t layer, int64_t slot) const {
    return values_[layer].data() + slot * slot_width_;
  }

  // The slot of `position` through `block_table`; no bounds checks (see check_block_table).
  int64_t slot(std::span<const int32_t> block_table, int64_t position) const {
    return static_cast<int64_t>(block_table[position / shape_.block_size]) * shape_.block_size +
           position % shape_.block_size;
  }
  // Copies every layer's K and V of block `from` into block `to` of `dst`, a cache of the same
  // layers and width (the host tier's pool is one). Throws paceline::Error on a block outside
  // either cache.
  void copy_block_to(int32_t from, PagedKvCache& dst, int32_t to) const;

  // Throws paceline::Error unless block_table covers positions [0, num_positions) with block
  // ids inside the cache. `who` names the sequence in the message.
  void check_block_table(std::span<const int32_t> block_table, int64_t num_positions,
                         uint64_t who) const;

 private:
  KvCacheShape shape_;
  int64_t slot_width_;
  std::vector<std::vector<float>> keys_;
  std::vector<std::vector<float>> values_;
};

}  // namespace paceline
