#include "kv/eviction_policy.h"

#include <algorithm>

namespace paceline {

std::optional<KvPolicy> kv_policy_from_name(std::string_view name) {
  if (name == "lru") return KvPolicy::kLru;
  if (name == "reuse") return KvPolicy::kReuse;
  if (name == "oracle") return KvPolicy::kOracle;
  return std::nullopt;
}

const char* kv_policy_name(KvPolicy policy) {
  switch (policy) {
    case KvPolicy::kLru:
      return "lru";
    case KvPolicy::kReuse:
      return "reuse";
    case KvPolicy::kOracle:
      return "oracle";
  }
  return "?";
}

void ReuseGapEstimate::observe(int64_t gap_ns, int64_t blocks) {
  if (blocks < kMinBlocks) return;
  gaps_[next_] = std::max<int64_t>(gap_ns, 0);
  next_ = (next_ + 1) % kWindow;
  count_ = std::min(count_ + 1, kWindow);
}

std::optional<int64_t> ReuseGapEstimate::percentile_ns(double q) const {
  if (count_ == 0) return std::nullopt;
  int64_t sorted[kWindow];
  std::copy(gaps_, gaps_ + count_, sorted);
  const int k = std::clamp(static_cast<int>(q * count_), 0, count_ - 1);
  std::nth_element(sorted, sorted + k, sorted + count_);
  return sorted[k];
}

int64_t ReuseGapEstimate::dead_after_ns() const {
  const std::optional<int64_t> p = percentile_ns(kDeadPercentile);
  if (!p) return INT64_MAX;
  return std::max<int64_t>(*p, 1'000'000);  // a floor of 1 ms: gaps of 0 happen
}

}  // namespace paceline
