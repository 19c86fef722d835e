#include "model/bpe_pair_map.h"

#include <utility>

namespace paceline {

void BpePairMap::insert(int32_t left, int32_t right, BpeMerge merge) {
  if ((size_ + 1) * 2 > slots_.size()) grow();  // keep the load at or below one half
  const uint64_t key = pack(left, right);
  for (size_t i = bucket(key);; i = (i + 1) & mask_) {
    Slot& slot = slots_[i];
    if (slot.key == key) {
      slot.merge = merge;
      return;
    }
    if (slot.key == kEmpty) {
      slot = {key, merge};
      ++size_;
      return;
    }
  }
}

void BpePairMap::grow() {
  std::vector<Slot> old = std::move(slots_);
  const size_t capacity = old.empty() ? 1024 : old.size() * 2;
  slots_.assign(capacity, Slot{kEmpty, {0, 0}});
  mask_ = capacity - 1;
  shift_ = 64 - __builtin_ctzll(capacity);
  size_ = 0;
  for (const Slot& slot : old) {
    if (slot.key == kEmpty) continue;
    insert(static_cast<int32_t>(slot.key >> 32), static_cast<int32_t>(slot.key & 0xFFFFFFFFu),
           slot.merge);
  }
}

}  // namespace paceline
