#include "engine/engine_metrics.h"

namespace paceline {

namespace {

void add_delta(Counter& c, int64_t now, int64_t before) {
  if (now > before) c.inc(static_cast<double>(now - before));
}

// Made once: on_step runs every step, and the simulator runs hundreds of thousands of them.
const std::vector<double>& buckets_step_time() {
  static const std::vector<double> b = exponential_buckets(0.0005, 2, 16);
  return b;
}
const std::vector<double>& buckets_batch() {
  static const std::vector<double> b = exponential_buckets(1, 2, 11);
  return b;
}
const std::vector<double>& buckets_tokens() {
  static const std::vector<double> b = exponential_buckets(1, 2, 16);
  return b;
}

}  // namespace

EngineMetrics::EngineMetrics(MetricsRegistry& registry) : reg_(registry) {
  // Register the always-present series so a scrape before the first request shows them at zero.
  on_step(StepPlan{}, StepResult{}, SchedulerStats{});
}

void EngineMetrics::on_step(const StepPlan& plan, const StepResult& result,
                            const SchedulerStats& s) {
  reg_.gauge("num_requests_running", "Requests in the running set").set(s.num_running);
  reg_.gauge("num_requests_waiting", "Requests waiting (preempted included)").set(s.num_waiting);
  reg_.gauge("kv_cache_usage_perc", "Fraction of KV blocks in use (0-1)").set(s.kv_usage);
  reg_.gauge("kv_cache_blocks_total", "KV blocks in the pool").set(s.num_kv_blocks);
  add_delta(reg_.counter("prefix_cache_queries_total", "Prompt tokens probed in the prefix cache"),
            s.prefix_cache_queries, last_.prefix_cache_queries);
  add_delta(reg_.counter("prefix_cache_hits_total", "Prompt tokens served by the prefix cache"),
            s.prefix_cache_hits, last_.prefix_cache_hits);
  add_delta(reg_.counter("prompt_tokens_total", "Prompt tokens of admitted requests"),
            s.prompt_tokens, last_.prompt_tokens);
  add_delta(reg_.counter("generation_tokens_total", "Output tokens committed"),
            s.generation_tokens, last_.generation_tokens);
  add_delta(reg_.counter("num_preemptions_total", "Requests preempted by recompute"),
            s.preemptions, last_.preemptions);
  const char* help_fin = "Finished requests by reason";
  add_delta(reg_.counter("request_success_total", help_fin, {{"finished_reason", "stop"}}),
            s.finished_stop, last_.finished_stop);
  add_delta(reg_.counter("request_success_total", help_fin, {{"finished_reason", "length"}}),
            s.finished_length, last_.finished_length);
  add_delta(reg_.counter("request_success_total", help_fin, {{"finished_reason", "abort"}}),
            s.finished_abort, last_.finished_abort);
  if (s.delayer) {
    const auto& d = *s.delayer;
    const PrefillDelayerCounters before = last_.delayer.value_or(PrefillDelayerCounters{});
    const char* help = "PrefillDelayer decisions by outcome";
    auto fire = [&](const char* reason, int64_t now, int64_t was) {
      add_delta(reg_.counter("prefill_delayer_decisions_total", help,
                             {{"outcome", "fire"}, {"reason", reason}}),
                now, was);
    };
    fire("first", d.fire_first, before.fire_first);
    fire("vacuous", d.fire_vacuous, before.fire_vacuous);
    fire("nodecode", d.fire_nodecode, before.fire_nodecode);
    fire("kv", d.fire_kv, before.fire_kv);
    fire("queue_ms", d.fire_queue_ms, before.fire_queue_ms);
    fire("ttft", d.fire_ttft, before.fire_ttft);
    fire("partial", d.fire_partial, before.fire_partial);
    fire("fill", d.fire_fill, before.fire_fill);
    fire("stall", d.fire_stall, before.fire_stall);
    add_delta(reg_.counter("prefill_delayer_decisions_total", help,
                           {{"outcome", "hold"}, {"reason", "any"}}),
              d.hold, before.hold);
    add_delta(reg_.counter("prefill_delayer_hold_decode_interval_total",
                           "Holds inside the protected decode interval"),
              d.hold_decode_interval, before.hold_decode_interval);
    reg_.gauge("prefill_delayer_hold_rate", "Holds over decisions since start").set(d.hold_rate());
  }
  if (!plan.seqs.empty()) {
    const MetricLabels kind{{"kind", forward_kind_name(plan.kind)}};
    reg_.histogram("step_time_seconds", "Forward time by kind", buckets_step_time(), kind)
        .observe(static_cast<double>(result.step_time_ns) * 1e-9);
    reg_.histogram("step_batch_size", "Sequences per forward by kind", buckets_batch(), kind)
        .observe(static_cast<double>(plan.seqs.size()));
    reg_.histogram("step_num_tokens", "Tokens per forward by kind", buckets_tokens(), kind)
        .observe(static_cast<double>(plan.num_tokens()));
  }
  last_ = s;
}

void EngineMetrics::on_first_scheduled(double queue_seconds) {
  reg_.histogram("request_queue_time_seconds", "Arrival to first scheduled",
                 exponential_buckets(0.001, 2, 18))
      .observe(queue_seconds);
}

void EngineMetrics::on_finished(const Usage& usage) {
  reg_.histogram("request_prompt_tokens", "Prompt tokens per finished request",
                 exponential_buckets(16, 2, 16))
      .observe(static_cast<double>(usage.prompt_tokens));
}

}  // namespace paceline
