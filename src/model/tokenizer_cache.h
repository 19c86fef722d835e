#pragma once
// A bounded cache from a pre-token (the raw bytes of one word) to its BPE ids. Real text repeats
// its words, so most words are looked up rather than merged. Each shard is an open-addressing
// table of 8-byte slots that grows with use, its keys and ids side by side in one byte arena, so
// that the working set of a text's vocabulary stays small enough for the CPU caches. Each shard
// has its own mutex: encode() stays const and safe to call from many threads.
#include <array>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace paceline {

class WordCache {
 public:
  // Words longer than this are not cached.
  static constexpr size_t kMaxWordBytes = 256;

  // Holds at most about `capacity` words; a full shard is emptied and starts over.
  explicit WordCache(size_t capacity);

  // Appends the cached ids of `word` to `out`; false when `word` is not cached.
  bool lookup(std::string_view word, std::vector<int32_t>& out) const;
  void store(std::string_view word, const int32_t* ids, size_t count);

 private:
  struct Slot {
    uint32_t tag = 0;     // high half of the word's hash, low bit set; 0 marks an empty slot
    uint32_t offset = 0;  // of the entry in the arena: key bytes (u16), id count (u16), key, ids
  };
  struct Shard {
    std::mutex mutex;
    std::vector<Slot> slots;
    std::string arena;
    size_t used = 0;
  };
  static constexpr size_t kShards = 16;
  static constexpr size_t kFirstSlots = 256;

  static uint64_t hash_of(std::string_view word);
  static uint32_t tag_of(uint64_t hash) { return static_cast<uint32_t>(hash >> 32) | 1; }
  Shard& shard_of(uint64_t hash) const { return shards_[hash % kShards]; }
  // The slot holding `word`, or the empty slot where it would go.
  static Slot& probe(Shard& shard, std::string_view word, uint64_t hash);
  void grow(Shard& shard) const;

  mutable std::array<Shard, kShards> shards_;
  size_t max_slots_;  // per shard
};

}  // namespace paceline
