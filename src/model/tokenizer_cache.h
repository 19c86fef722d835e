#pragma once
// A bounded cache from a pre-token (the raw bytes of one word) to its BPE ids. Real text repeats
// its words, so most words are looked up rather than merged. Each shard is an open-addressing
// table whose keys and ids sit side by side in one byte arena (one or two cache misses per hit),
// under its own mutex so that encode() stays const and safe to call from many threads.
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
    uint64_t hash = 0;    // 0 marks an empty slot; stored hashes have the low bit set
    uint32_t offset = 0;  // of the key in the arena; the ids follow it
    uint16_t key_bytes = 0;
    uint16_t id_count = 0;
  };
  struct Shard {
    std::mutex mutex;
    std::vector<Slot> slots;
    std::string arena;
    size_t used = 0;
  };
  static constexpr size_t kShards = 16;

  static uint64_t hash_of(std::string_view word);
  Shard& shard_of(uint64_t hash) const { return shards_[hash >> 60]; }

  mutable std::array<Shard, kShards> shards_;
};

}  // namespace paceline
