#include "model/tokenizer_cache.h"

#include <bit>
#include <cstring>

namespace paceline {
namespace {

uint64_t load_bytes(const char* p, size_t n) {  // n <= 8
  uint64_t v = 0;
  std::memcpy(&v, p, n);
  return v;
}

uint64_t mix(uint64_t a, uint64_t b) {
  const __uint128_t product =
      static_cast<__uint128_t>(a ^ 0xA0761D6478BD642Full) * (b ^ 0xE7037ED1A0B428DBull);
  return static_cast<uint64_t>(product) ^ static_cast<uint64_t>(product >> 64);
}

}  // namespace

WordCache::WordCache(size_t capacity) {
  const size_t per_shard = std::bit_ceil(capacity / kShards * 2 + 2);  // load at most one half
  for (Shard& shard : shards_) shard.slots.resize(per_shard);
}

uint64_t WordCache::hash_of(std::string_view word) {
  const char* p = word.data();
  size_t n = word.size();
  uint64_t h = n * 0x9E3779B97F4A7C15ull;
  for (; n > 8; p += 8, n -= 8) h = mix(h, load_bytes(p, 8));
  return mix(h, load_bytes(p, n)) | 1;
}

bool WordCache::lookup(std::string_view word, std::vector<int32_t>& out) const {
  const uint64_t hash = hash_of(word);
  Shard& shard = shard_of(hash);
  std::lock_guard lock(shard.mutex);
  const size_t mask = shard.slots.size() - 1;
  for (size_t i = hash & mask;; i = (i + 1) & mask) {
    const Slot& slot = shard.slots[i];
    if (slot.hash == 0) return false;
    if (slot.hash != hash || slot.key_bytes != word.size()) continue;
    const char* key = shard.arena.data() + slot.offset;
    if (std::memcmp(key, word.data(), word.size()) != 0) continue;
    const size_t first = out.size();
    out.resize(first + slot.id_count);
    std::memcpy(out.data() + first, key + slot.key_bytes, slot.id_count * sizeof(int32_t));
    return true;
  }
}

void WordCache::store(std::string_view word, const int32_t* ids, size_t count) {
  if (word.size() > kMaxWordBytes || count > UINT16_MAX) return;
  const uint64_t hash = hash_of(word);
  Shard& shard = shard_of(hash);
  std::lock_guard lock(shard.mutex);
  if ((shard.used + 1) * 2 > shard.slots.size()) {  // full: start over
    std::fill(shard.slots.begin(), shard.slots.end(), Slot{});
    shard.arena.clear();
    shard.used = 0;
  }
  const size_t mask = shard.slots.size() - 1;
  size_t i = hash & mask;
  for (; shard.slots[i].hash != 0; i = (i + 1) & mask) {
    const Slot& slot = shard.slots[i];
    if (slot.hash == hash && slot.key_bytes == word.size() &&
        std::memcmp(shard.arena.data() + slot.offset, word.data(), word.size()) == 0) {
      return;  // another thread stored it first
    }
  }
  shard.slots[i] = {hash, static_cast<uint32_t>(shard.arena.size()),
                    static_cast<uint16_t>(word.size()), static_cast<uint16_t>(count)};
  shard.arena.append(word);
  shard.arena.append(reinterpret_cast<const char*>(ids), count * sizeof(int32_t));
  ++shard.used;
}

}  // namespace paceline
