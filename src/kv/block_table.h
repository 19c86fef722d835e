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
  // Under a copy budget (KvConfig::max_copy_blocks_per_step), blocks an admission still holds
  // in reserve: KvManager::continue_allocation takes them over the next steps, the first ones
  // loaded from these host blocks (pinned, the next one last).
  int64_t num_reserved = 0;
  std::vector<int32_t> pending_loads;

  bool empty() const { return ids.empty(); }
  // Every block the sequence was admitted for is taken (and its loads planned).
  bool complete() const { return num_reserved == 0; }
};

}  // namespace paceline
