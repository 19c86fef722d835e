#pragma once
// A cost model whose step times a test can work out by hand.
#include <cstdint>
#include <string>

#include "sim/cost_model.h"

namespace paceline::sim::test_util {

constexpr int64_t kMs = 1'000'000;

// Prefill: 100 ms plus 1 ms per token; decode: 10 ms plus 1 ms per sequence.
class LinearCost final : public CostModel {
 public:
  int64_t step_time_ns(const StepWork& w) const override {
    if (w.kind == ForwardKind::kDecode) return (10 + w.num_seqs) * kMs;
    return (100 + w.tokens) * kMs;
  }
  std::string describe() const override { return "linear"; }
};

}  // namespace paceline::sim::test_util
