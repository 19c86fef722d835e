#pragma once
// Everything the scheduler is told at startup. The CLI fills it from flags (and the delayer's part
// from ATOM's environment variables too); the model and the executor supply max_model_len and
// num_kv_blocks.
#include <cstdint>
#include <string_view>
#include <vector>

#include "kv/eviction_policy.h"
#include "sched/prefill_delayer.h"
#include "sched/spec_acceptance.h"

namespace paceline {

// How one forward is composed.
enum class ScheduleKind {
  // Each forward is prefill-only or decode-only, prefill first (nano-vllm, ATOM). The default.
  kSeparate,
  // One token budget per forward: decode tokens first, then prefill chunks (vLLM V1, Sarathi).
  kMixed,
};

ScheduleKind parse_schedule_kind(std::string_view name);  // "separate" | "mixed"; else throws
std::string_view schedule_kind_name(ScheduleKind kind);

// Which waiting request is admitted next.
enum class AdmissionPolicy {
  // Arrival order; the first that does not fit stops admission (vLLM). The default.
  kFcfs,
  // When the queue's head does not fit in KV memory: the requests with the longest cached prefix
  // first (SGLang's "lpm"), so that what is resident is used before it is evicted, except that a
  // request waiting longer than lpm_max_wait_ms goes first and nobody overtakes it.
  kLpm,
  // Short prefills first (the CLI's default): a waiting request whose prompt is mostly resident
  // (at most a quarter of the forward's token budget left to prefill) is admitted ahead of the
  // queue and of the prefills already in flight, in a forward of its own, at most 16 such
  // forwards in a row. A turn that finds its session cached then waits for the forward in
  // progress instead of every recompute ahead of it (src/sched/short_first.cpp).
  kShortFirst,
};

// "fcfs" | "lpm" | "short-first"; else throws
AdmissionPolicy parse_admission_policy(std::string_view name);
std::string_view admission_policy_name(AdmissionPolicy policy);

struct SchedulerConfig {
  int64_t max_num_seqs = 256;              // --max-num-seqs
  int64_t max_num_batched_tokens = 16384;  // --max-num-batched-tokens: tokens per forward
  int64_t max_model_len = 0;               // --max-model-len, else the model's; required
  int64_t block_size = 16;                 // --block-size
  int64_t num_kv_blocks = 0;               // what the executor's KV memory holds; required
  int64_t num_host_kv_blocks = 0;          // --kv-offloading-size in blocks; 0: no host tier
  // --kv-offloading-max-blocks-per-step: KvConfig::max_copy_blocks_per_step; 0: no cap.
  int64_t kv_offloading_max_blocks_per_step = 0;
  bool enable_prefix_caching = true;       // --enable-prefix-caching / --no-enable-prefix-caching
  KvPolicy kv_policy = KvPolicy::kLru;     // --kv-policy: which cached block gives way
  ScheduleKind schedule = ScheduleKind::kSeparate;  // --schedule
  AdmissionPolicy admission = AdmissionPolicy::kFcfs;  // --schedule-policy
  double lpm_max_wait_ms = 30000;                      // --schedule-policy-max-wait-ms
  // Off: a prompt is admitted only when all of it fits the forward's remaining token budget.
  bool enable_chunked_prefill = true;
  // Most prefill tokens one request computes in one forward; 0: only the budget limits it.
  int64_t long_prefill_token_threshold = 0;  // --long-prefill-token-threshold
  // --max-step-ms: prefill tokens per forward are cut so that the forward's predicted time (the
  // executor's step-cost model, Scheduler::set_step_cost) stays under this; 0: no time bound.
  double max_step_ms = 0;
  // Decode batch sizes with a captured CUDA graph; empty: the default list for max_num_seqs.
  std::vector<int32_t> cudagraph_capture_sizes;  // --cudagraph-capture-sizes
  SpecAcceptanceConfig speculative;              // --speculative-tokens and acceptance
  uint64_t seed = 0;  // run seed: speculative acceptance draws, default sampling seeds
  // Its max_num_batched_tokens is ignored: the scheduler passes its own.
  PrefillDelayerConfig delayer;

  // Throws paceline::Error naming the flag when a value is out of range.
  void validate() const;
};

}  // namespace paceline
