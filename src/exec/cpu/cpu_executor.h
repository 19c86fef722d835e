#pragma once
// The reference Executor: runs a StepPlan through CpuModel and samples one token per requested
// logit row. Slow, exact, and the yardstick the CUDA executor is checked against.
#include <cstdint>
#include <optional>

#include "exec/cpu/cpu_model.h"
#include "exec/executor.h"
#include "exec/kv_load_faults.h"

namespace paceline {

class CpuExecutor final : public Executor {
 public:
  // `num_host_blocks` > 0: a host tier of that many blocks, a second float32 pool that the
  // plans' kv_transfers copy blocks to and from. tensor_parallel_size > 1: the model split into
  // that many ranks, computed in turn (CpuModel).
  CpuExecutor(const ModelConfig& config, const Weights& weights, KvCacheShape kv_shape,
              int num_threads, int64_t num_host_blocks = 0, int tensor_parallel_size = 1);

  // step_time_ns covers the forward and the sampling, on the steady clock. The token drawn from
  // the logits of the token at absolute position p uses p as its sampling position. A load that
  // fails (only ever through the PACELINE_FAILPOINT_KV_LOAD failpoint, kv_load_faults.h) is
  // reported in failed_loads, and no forward runs.
  StepResult execute(const StepPlan& plan) override;
  // A float32 KV cache, no graphs, no row limit (activations grow with the step).
  ExecutorCapabilities capabilities() const override;

  CpuModel& model() { return model_; }

 private:
  // The loads that failed.
  std::vector<BlockCopy> copy_blocks(const KvTransfers& transfers);

  CpuModel model_;
  std::optional<PagedKvCache> host_;
  KvLoadFaults faults_;
};

}  // namespace paceline
