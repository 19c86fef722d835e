#pragma once
// Runs what the scheduler planned. CPU (reference), CUDA (fast), the null executor and the
// simulator's cost model implement this; everything an executor needs is in the plan.
#include <cstdint>
#include <string>
#include <vector>

#include "sched/step_cost.h"
#include "sched/step_plan.h"

namespace paceline {

struct KvCacheShape {
  int64_t num_blocks = 0;
  int64_t block_size = 16;
};

// What an executor was built with, as it reports it: the engine sizes the scheduler from this
// and the step log's header names it, so that no caller guesses from a device name.
struct ExecutorCapabilities {
  KvCacheShape kv;
  std::string kv_dtype;  // one KV element: "float32", "bfloat16"
  int64_t kv_element_bytes = 0;
  // Decode batch sizes with a CUDA graph, ascending; empty: every step runs eagerly.
  std::vector<int32_t> graph_sizes;
  // Tokens per forward its activation memory was sized for; 0: no limit.
  int64_t max_num_batched_tokens = 0;
  // Blocks of the host-memory KV tier it holds (--kv-offloading-size); 0: none. It makes every
  // plan's kv_transfers before computing.
  int64_t num_host_kv_blocks = 0;
  // It answers ScheduledSeq::prompt_logprob_targets (completions' echo with logprobs).
  bool prompt_logprobs = false;
  // It reports raw logprobs (before bias and penalties) for rows whose logits bias or penalties
  // adjust. The CUDA executor adjusts the logits in place before the draw, so it refuses that
  // combination until it keeps the raw values.
  bool logprobs_with_logits_processing = false;
  // Ranks the model is split into (--tensor-parallel-size); step logs record it, so that a
  // profile fitted to them is used only for a simulation of the same size.
  int tensor_parallel_size = 1;
};

class Executor {
 public:
  virtual ~Executor() = default;
  virtual StepResult execute(const StepPlan& plan) = 0;
  virtual ExecutorCapabilities capabilities() const = 0;
  // What its step times are predicted with, for --max-step-ms, when the executor knows them
  // beforehand (the simulator's cost model); nullptr: the engine core fits its measured steps
  // (MeasuredStepCost).
  virtual const StepCostModel* step_cost_model() const { return nullptr; }
  KvCacheShape kv_cache_shape() const { return capabilities().kv; }
};

}  // namespace paceline
