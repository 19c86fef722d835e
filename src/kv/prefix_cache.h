#pragma once
// The prefix cache: full blocks of computed tokens found again by content. Chained block hashes:
// the identity of a full block of tokens is its own token ids plus the hash of the block before it,
// so equal hashes mean equal prefixes, not just equal blocks. xxHash (XXH3, 64 bits) with the
// parent hash as seed; a 64-bit collision is astronomically rare and is not checked (nano-vllm
// compares token ids on a hit, vLLM does not).
#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

namespace paceline {

// The parent hash of a sequence's first block.
inline constexpr uint64_t kRootBlockHash = 0x70616365'6c696e65ULL;  // "paceline"

uint64_t hash_block(uint64_t parent_hash, std::span<const int32_t> block_tokens);

// Appends to `hashes` the chained hash of every full block of `tokens` it does not cover yet.
// `hashes` is a memo: the tokens of a full block never change, so earlier entries stay valid as a
// sequence grows. Stops after `max_blocks` entries in total.
void extend_block_hashes(std::vector<uint64_t>& hashes, std::span<const int32_t> tokens,
                         int64_t block_size, int64_t max_blocks);

// Which block holds each cached hash. The block pool owns one and keeps it in step with the
// blocks: an entry lives from publish until its block is evicted for reuse.
class PrefixCache {
 public:
  std::optional<int32_t> find(uint64_t hash) const;
  // False (and no change) when the hash is already cached in another block: the first copy wins.
  bool insert(uint64_t hash, int32_t block);
  // Drops the entry only if it still names this block.
  void erase(uint64_t hash, int32_t block);
  int64_t size() const { return static_cast<int64_t>(blocks_.size()); }

 private:
  std::unordered_map<uint64_t, int32_t> blocks_;
};

}  // namespace paceline
