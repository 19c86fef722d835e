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

// One multiply-xorshift round per 8 bytes, and MurmurHash3's finalizer at the end.
uint64_t mix(uint64_t h, uint64_t v) {
  h = (h ^ v) * 0x9E3779B97F4A7C15ull;
  return h ^ (h >> 29);
}

uint64_t finish(uint64_t h) {
  h = (h ^ (h >> 33)) * 0xFF51AFD7ED558CCDull;
  h = (h ^ (h >> 33)) * 0xC4CEB9FE1A85EC53ull;
  return h ^ (h >> 33);
}

struct EntryHeader {
  uint16_t key_bytes;
  uint16_t id_count;
};

EntryHeader header_at(const std::string& arena, uint32_t offset) {
  EntryHeader h;
  std::memcpy(&h, arena.data() + offset, sizeof(h));
  return h;
}

}  // namespace

WordCache::WordCache(size_t capacity)
    : max_slots_(std::bit_ceil(std::max(capacity / kShards * 2, kFirstSlots))) {
  for (Shard& shard : shards_) shard.slots.resize(kFirstSlots);
}

uint64_t WordCache::hash_of(std::string_view word) {
  const char* p = word.data();
  size_t n = word.size();
  uint64_t h = n * 0x9E3779B97F4A7C15ull;
  for (; n > 8; p += 8, n -= 8) h = mix(h, load_bytes(p, 8));
  return finish(mix(h, load_bytes(p, n)));
}

WordCache::Slot& WordCache::probe(Shard& shard, std::string_view word, uint64_t hash) {
  const uint32_t tag = tag_of(hash);
  const size_t mask = shard.slots.size() - 1;
  for (size_t i = (hash >> 8) & mask;; i = (i + 1) & mask) {
    Slot& slot = shard.slots[i];
    if (slot.tag == 0) return slot;
    if (slot.tag != tag) continue;
    const EntryHeader h = header_at(shard.arena, slot.offset);
    if (h.key_bytes == word.size() &&
        std::memcmp(shard.arena.data() + slot.offset + sizeof(h), word.data(), word.size()) == 0) {
      return slot;
    }
  }
}

bool WordCache::lookup(std::string_view word, std::vector<int32_t>& out) const {
  const uint64_t hash = hash_of(word);
  Shard& shard = shard_of(hash);
  std::lock_guard lock(shard.mutex);
  const Slot& slot = probe(shard, word, hash);
  if (slot.tag == 0) return false;
  const EntryHeader h = header_at(shard.arena, slot.offset);
  const size_t first = out.size();
  out.resize(first + h.id_count);
  std::memcpy(out.data() + first, shard.arena.data() + slot.offset + sizeof(h) + h.key_bytes,
              h.id_count * sizeof(int32_t));
  return true;
}

void WordCache::store(std::string_view word, const int32_t* ids, size_t count) {
  if (word.size() > kMaxWordBytes || count > UINT16_MAX) return;
  const uint64_t hash = hash_of(word);
  Shard& shard = shard_of(hash);
  std::lock_guard lock(shard.mutex);
  if ((shard.used + 1) * 2 > shard.slots.size()) grow(shard);
  Slot& slot = probe(shard, word, hash);
  if (slot.tag != 0) return;  // another thread stored it first
  slot = {tag_of(hash), static_cast<uint32_t>(shard.arena.size())};
  const EntryHeader h{static_cast<uint16_t>(word.size()), static_cast<uint16_t>(count)};
  shard.arena.append(reinterpret_cast<const char*>(&h), sizeof(h));
  shard.arena.append(word);
  shard.arena.append(reinterpret_cast<const char*>(ids), count * sizeof(int32_t));
  ++shard.used;
}

void WordCache::grow(Shard& shard) const {
  if (shard.slots.size() >= max_slots_) {  // full: start over
    shard.slots.assign(shard.slots.size(), Slot{});
    shard.arena.clear();
    shard.used = 0;
    return;
  }
  std::vector<Slot> old(shard.slots.size() * 2);
  old.swap(shard.slots);
  for (const Slot& slot : old) {
    if (slot.tag == 0) continue;
    const EntryHeader h = header_at(shard.arena, slot.offset);
    const std::string_view key(shard.arena.data() + slot.offset + sizeof(h), h.key_bytes);
    probe(shard, key, hash_of(key)) = slot;
  }
}

}  // namespace paceline
