#include "sched/scheduler_config.h"

#include <cmath>
#include <limits>

#include "base/error.h"

namespace paceline {

ScheduleKind parse_schedule_kind(std::string_view name) {
  if (name == "separate") return ScheduleKind::kSeparate;
  if (name == "mixed") return ScheduleKind::kMixed;
  fail("--schedule must be 'separate' or 'mixed' (got '{}')", name);
}

std::string_view schedule_kind_name(ScheduleKind kind) {
  return kind == ScheduleKind::kMixed ? "mixed" : "separate";
}

AdmissionPolicy parse_admission_policy(std::string_view name) {
  if (name == "fcfs") return AdmissionPolicy::kFcfs;
  if (name == "lpm") return AdmissionPolicy::kLpm;
  if (name == "short-first") return AdmissionPolicy::kShortFirst;
  fail("--schedule-policy must be 'fcfs', 'lpm' or 'short-first' (got '{}')", name);
}

std::string_view admission_policy_name(AdmissionPolicy policy) {
  switch (policy) {
    case AdmissionPolicy::kFcfs:
      return "fcfs";
    case AdmissionPolicy::kLpm:
      return "lpm";
    case AdmissionPolicy::kShortFirst:
      return "short-first";
  }
  return "?";
}

void SchedulerConfig::validate() const {
  if (!(lpm_max_wait_ms >= 0)) {
    fail("--schedule-policy-max-wait-ms must be 0 or more (got {})", lpm_max_wait_ms);
  }
  if (max_num_seqs < 1 || max_num_seqs > std::numeric_limits<int32_t>::max()) {
    fail("--max-num-seqs must be at least 1 (got {})", max_num_seqs);
  }
  if (max_num_batched_tokens < 1) {
    fail("--max-num-batched-tokens must be at least 1 (got {})", max_num_batched_tokens);
  }
  if (max_model_len < 1) fail("--max-model-len must be at least 1 (got {})", max_model_len);
  if (block_size < 1) fail("--block-size must be at least 1 (got {})", block_size);
  if (num_kv_blocks < 1) fail("the KV cache must hold at least one block (got {})", num_kv_blocks);
  if (kv_offloading_max_blocks_per_step < 0) {
    fail("--kv-offloading-max-blocks-per-step must be 0 (no cap) or more (got {})",
         kv_offloading_max_blocks_per_step);
  }
  if (long_prefill_token_threshold < 0) {
    fail("--long-prefill-token-threshold must be 0 or more (got {})", long_prefill_token_threshold);
  }
  if (!(max_step_ms >= 0) || !std::isfinite(max_step_ms)) {
    fail("--max-step-ms must be 0 (off) or a positive number of milliseconds (got {})",
         max_step_ms);
  }
  if (!enable_chunked_prefill && max_num_batched_tokens < max_model_len) {
    fail(
        "--max-num-batched-tokens ({}) is below --max-model-len ({}): a long prompt could never "
        "be scheduled without chunked prefill",
        max_num_batched_tokens, max_model_len);
  }
  if (max_num_batched_tokens < int64_t{speculative.speculative_tokens} + 1) {
    fail("--max-num-batched-tokens ({}) cannot hold one speculative decode row ({} tokens)",
         max_num_batched_tokens, speculative.speculative_tokens + 1);
  }
}

}  // namespace paceline
