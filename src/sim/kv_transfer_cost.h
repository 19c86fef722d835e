#pragma once
// What a plan's host-tier block copies cost: (blocks × block bytes) / bandwidth per direction,
// stores and loads on their own copy streams at once (PCIe is full duplex), so the longer
// direction counts. The simulator's executor and the paced null executor price them alike.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "kv/kv_manager.h"

namespace paceline::sim {

struct KvTransferCost {
  int64_t block_bytes = 0;
  double bytes_per_s = 0;  // each way; 0: copies are free

  int64_t ns(const KvTransfers& t) const {
    if (t.empty() || bytes_per_s <= 0) return 0;
    const auto blocks = static_cast<double>(std::max(t.stores.size(), t.loads.size()));
    return std::llround(blocks * static_cast<double>(block_bytes) / bytes_per_s * 1e9);
  }
};

}  // namespace paceline::sim
