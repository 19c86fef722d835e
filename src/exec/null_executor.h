#pragma once
// The zero-cost Executor: computes nothing and answers every requested logit row at once with a
// token from a fixed cycle of ordinary text tokens (never an EOS id), so that what is left to
// measure is the server's own overhead. The tokens are meaningless; the KV cache exists only as
// a shape for the scheduler.
#include <cstdint>
#include <span>
#include <vector>

#include "exec/executor.h"

namespace paceline {

class NullExecutor final : public Executor {
 public:
  // Cycles through ids [1000, 2000) that are below vocab_size and not in eos_token_ids; a
  // vocabulary too small for that range cycles through all of its non-EOS ids instead.
  // `num_host_blocks`: the host tier it reports (no memory is taken for it either).
  NullExecutor(KvCacheShape kv_shape, int64_t vocab_size, std::span<const int64_t> eos_token_ids,
               int64_t num_host_blocks = 0);

  // The token for absolute position p is cycle[p % cycle.size()]; step_time_ns is 0. Rows that
  // ask for logprobs get a fixed geometric distribution: the chosen token -ln 2, and the k
  // highest the cycle's next tokens at -ln 2, -2 ln 2, ...; prompt tokens (echo) the same, the
  // prompt token taking the chosen one's place.
  StepResult execute(const StepPlan& plan) override;
  // The KV shape it was given, sized as the CPU executor's float32 cache would be; no graphs.
  ExecutorCapabilities capabilities() const override;

  const std::vector<int32_t>& token_cycle() const { return cycle_; }

 private:
  KvCacheShape kv_shape_;
  int64_t num_host_blocks_;
  std::vector<int32_t> cycle_;
};

}  // namespace paceline
