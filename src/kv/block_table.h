#pragma once
// One sequence's view of the KV cache: which physical block holds each run of block_size
// positions, and what the prefix cache knows about its full blocks.
#include <cstdint>
#include <vector>

namespace paceline {

struct BlockTable {
  // Positions [i * block_size, (i + 1) * block_size) live in block ids[i].
  std::vector<int32_t> ids;
  // Chained hashes of the sequence's full token blocks (a memo, see extend_block_hashes). It
  // survives free(): a preempted sequence probes the cache with the same hashes when it returns.
  std::vector<uint64_t> hashes;
  // Leading entries of `ids` already offered to the prefix cache.
  int64_t num_published = 0;

  bool empty() const { return ids.empty(); }
};

}  // namespace paceline
