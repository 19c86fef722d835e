#pragma once
// Open-addressing hash map from a pair of token ids to the merge that joins them: the hot lookup
// of byte-level BPE, so it stores 16-byte slots in one flat array probed linearly.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace paceline {

struct BpeMerge {
  int32_t rank;    // position in the merges list: lower merges first
  int32_t merged;  // id of the token the pair becomes
};

class BpePairMap {
 public:
  // Inserts or replaces the merge for (left, right).
  void insert(int32_t left, int32_t right, BpeMerge merge);
  // The merge for (left, right), or nullptr when the pair never merges.
  const BpeMerge* find(int32_t left, int32_t right) const {
    if (slots_.empty()) return nullptr;
    const uint64_t key = pack(left, right);
    for (size_t i = bucket(key);; i = (i + 1) & mask_) {
      const Slot& slot = slots_[i];
      if (slot.key == key) return &slot.merge;
      if (slot.key == kEmpty) return nullptr;
    }
  }
  size_t size() const { return size_; }

 private:
  struct Slot {
    uint64_t key;
    BpeMerge merge;
  };
  static constexpr uint64_t kEmpty = ~uint64_t{0};

  static uint64_t pack(int32_t left, int32_t right) {
    return (uint64_t{static_cast<uint32_t>(left)} << 32) | static_cast<uint32_t>(right);
  }
  size_t bucket(uint64_t key) const {
    return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> shift_);  // Fibonacci hashing
  }
  void grow();

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  int shift_ = 64;
  size_t size_ = 0;
};

}  // namespace paceline
