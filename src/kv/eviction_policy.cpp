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

void ReuseGapEstimate::observe(int64_t gap_ns) {
  gaps_[next_] = std::max<int64_t>(gap_ns, 0);
  next_ = (next_ + 1) % kWindow;
  count_ = std::min(count_ + 1, kWindow);
}

std::optional<int64_t> ReuseGapEstimate::median_ns() const {
  if (count_ == 0) return std::nullopt;
  int64_t sorted[kWindow];
  std::copy(gaps_, gaps_ + count_, sorted);
  std::nth_element(sorted, sorted + count_ / 2, sorted + count_);
  return sorted[count_ / 2];
}

int64_t ReuseGapEstimate::dead_after_ns() const {
  const std::optional<int64_t> m = median_ns();
  if (!m) return INT64_MAX;
  return std::max<int64_t>(*m, 1'000'000) * kDeadFactor;  // a floor of 1 ms: gaps of 0 happen  // a floor of 1 ms: gaps of 0 happen
}

}  // namespace paceline
