#include "cli/engine_options.h"

#include <cstdlib>

#include "base/error.h"
#include "sched/cudagraph_sizes.h"

namespace paceline {

void add_engine_options(CLI::App& cmd, EngineOptions& o) {
  cmd.add_option("--max-model-len", o.max_model_len, "context limit (default: the model's)");
  cmd.add_option("--max-num-seqs", o.max_num_seqs, "sequences per forward")->capture_default_str();
  cmd.add_option("--max-num-batched-tokens", o.max_num_batched_tokens, "tokens per forward")
      ->capture_default_str();
  cmd.add_flag("--enable-prefix-caching,!--no-enable-prefix-caching", o.enable_prefix_caching,
               "reuse KV blocks of shared prompt prefixes (on by default)");
  cmd.add_option("--kv-policy", o.kv_policy,
                 "which cached KV block gives way when memory is short: lru, reuse (predicted "
                 "next use; keeps whole sessions), oracle (paceline sim: Belady's rule on the "
                 "trace, the yardstick)")
      ->capture_default_str();
  cmd.add_option("--schedule", o.schedule,
                 "separate: each forward prefill-only or decode-only; mixed: one token budget, "
                 "decodes first")
      ->check(CLI::IsMember({"separate", "mixed"}))
      ->capture_default_str();
  cmd.add_option("--schedule-policy", o.schedule_policy,
                 "admission order: fcfs (arrival order), lpm (when KV is short, the longest "
                 "cached prefix first), short-first (a request with at most a quarter of the "
                 "token budget left to prefill, its prefix cached, goes first, in a forward of "
                 "its own)")
      ->check(CLI::IsMember({"fcfs", "lpm", "short-first"}))
      ->capture_default_str();
  cmd.add_option("--schedule-policy-max-wait-ms", o.schedule_policy_max_wait_ms,
                 "lpm: a request waiting longer goes next and nobody overtakes it")
      ->capture_default_str();
  cmd.add_option("--long-prefill-token-threshold", o.long_prefill_token_threshold,
                 "most prefill tokens one request computes per forward (0: the budget)")
      ->capture_default_str();
  cmd.add_option("--kv-offloading-max-blocks-per-step", o.kv_offloading_max_blocks_per_step,
                 "host KV tier: the most KV blocks one forward copies each way for admissions; "
                 "a longer reload or store goes over several steps while the request waits and "
                 "decodes go on (0: no cap)")
      ->capture_default_str();
  cmd.add_option("--max-step-ms", o.max_step_ms,
                 "cut long prefills so that no forward is predicted to take longer (measured "
                 "step times; the cost model under sim); 0: off. Default: serve on the CPU "
                 "1000, otherwise off");
  cmd.add_option("--cudagraph-capture-sizes", o.cudagraph_capture_sizes,
                 "decode batch sizes with CUDA graphs, e.g. 1-32,48,64,128");
  cmd.add_option("--speculative-tokens", o.speculative_tokens,
                 "draft tokens per decode step (synthetic acceptance)")
      ->capture_default_str();
  auto* al = cmd.add_option("--spec-decode-acceptance-length", o.spec_acceptance_length,
                            "mean tokens committed per decode step, 1..k+1");
  auto* ar = cmd.add_option("--spec-decode-acceptance-rate", o.spec_acceptance_rate,
                            "per-draft acceptance rate r: length = 1 + k*r");
  al->excludes(ar);
  auto& d = o.delayer;
  cmd.add_flag("--prefill-delayer,!--no-prefill-delayer", d.enabled,
               "PrefillDelayer master switch (env ATOM_ENABLE_PREFILL_DELAYER; default on)");
  // CLI11 writes false into an optional<bool> flag when it is added; unset means "not passed",
  // so that the environment and the default decide.
  d.enabled.reset();
  cmd.add_option("--prefill-decode-interval", d.prefill_decode_interval,
                 "protected decode passes after each prefill (env ATOM_PREFILL_DECODE_INTERVAL)");
  cmd.add_option("--prefill-delayer-max-queue-ms", d.max_queue_ms,
                 "release when the oldest waiter is this old (ATOM_PREFILL_DELAYER_MAX_QUEUE_MS)");
  cmd.add_option("--prefill-delayer-target-fill", d.target_fill,
                 "fraction of max-num-batched-tokens (ATOM_PREFILL_DELAYER_TARGET_FILL)");
  cmd.add_option("--prefill-delayer-ttft-max-ticks", d.ttft_max_ticks,
                 "longest hold episode (ATOM_PREFILL_DELAYER_TTFT_MAX_TICKS)");
  cmd.add_option("--prefill-delayer-partial-max-ticks", d.partial_max_ticks,
                 "longest hold with a chunked prefill in flight "
                 "(ATOM_PREFILL_DELAYER_PARTIAL_MAX_TICKS)");
  cmd.add_option("--prefill-delayer-stall-ticks", d.stall_ticks,
                 "passes of non-growing queue before release (ATOM_PREFILL_DELAYER_STALL_TICKS)");
  cmd.add_option("--prefill-delayer-kv-high", d.kv_high,
                 "release at or above this KV usage (ATOM_PREFILL_DELAYER_KV_HIGH_WATERMARK)");
  cmd.add_option("--prefill-delayer-kv-low", d.kv_low,
                 "release below this KV usage (ATOM_PREFILL_DELAYER_TOKEN_USAGE_LOW_WATERMARK)");
}

ResolvedEngineConfig resolve_engine_options(const EngineOptions& o, int64_t model_max_len,
                                            uint64_t seed, bool allow_oracle) {
  ResolvedEngineConfig r;
  SchedulerConfig& c = r.scheduler;
  c.max_model_len = o.max_model_len.value_or(model_max_len);
  if (c.max_model_len < 1) fail("--max-model-len must be at least 1, got {}", c.max_model_len);
  c.max_num_seqs = o.max_num_seqs;
  c.max_num_batched_tokens = o.max_num_batched_tokens;
  c.enable_prefix_caching = o.enable_prefix_caching;
  const std::optional<KvPolicy> policy = kv_policy_from_name(o.kv_policy);
  if (!policy) fail("--kv-policy: '{}' is not one of lru, reuse, oracle", o.kv_policy);
  if (*policy == KvPolicy::kOracle && !allow_oracle) {
    fail("--kv-policy oracle needs the trace's future: only `paceline sim` has it");
  }
  c.kv_policy = *policy;
  c.schedule = parse_schedule_kind(o.schedule);
  c.admission = parse_admission_policy(o.schedule_policy);
  c.lpm_max_wait_ms = o.schedule_policy_max_wait_ms;
  c.long_prefill_token_threshold = o.long_prefill_token_threshold;
  c.kv_offloading_max_blocks_per_step = o.kv_offloading_max_blocks_per_step;
  c.max_step_ms = o.max_step_ms.value_or(0);
  if (!o.cudagraph_capture_sizes.empty()) {
    c.cudagraph_capture_sizes = parse_cudagraph_capture_sizes(o.cudagraph_capture_sizes);
  }
  c.speculative.speculative_tokens = o.speculative_tokens;
  c.speculative.acceptance_length = o.spec_acceptance_length;
  c.speculative.acceptance_rate = o.spec_acceptance_rate;
  c.seed = seed;
  c.delayer = resolve_prefill_delayer_config(
      o.delayer, [](const char* name) { return std::getenv(name); }, r.delayer_sources);
  c.delayer.max_num_batched_tokens = c.max_num_batched_tokens;
  return r;
}

}  // namespace paceline
