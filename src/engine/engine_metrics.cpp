#include "engine/engine_metrics.h"

namespace paceline {

namespace {

void add_delta(Counter& c, int64_t now, int64_t before) {
  if (now > before) c.inc(static_cast<double>(now - before));
}

Counter* fire_counter(MetricsRegistry& reg, const char* reason) {
  return &reg.counter("prefill_delayer_decisions_total", "PrefillDelayer decisions by outcome",
                      {{"outcome", "fire"}, {"reason", reason}});
}

}  // namespace

EngineMetrics::DelayerSeries::DelayerSeries(MetricsRegistry& reg)
    : first(fire_counter(reg, "first")),
      vacuous(fire_counter(reg, "vacuous")),
      nodecode(fire_counter(reg, "nodecode")),
      kv(fire_counter(reg, "kv")),
      queue_ms(fire_counter(reg, "queue_ms")),
      ttft(fire_counter(reg, "ttft")),
      partial(fire_counter(reg, "partial")),
      fill(fire_counter(reg, "fill")),
      stall(fire_counter(reg, "stall")),
      hold(&reg.counter("prefill_delayer_decisions_total", "PrefillDelayer decisions by outcome",
                        {{"outcome", "hold"}, {"reason", "any"}})),
      hold_decode_interval(&reg.counter("prefill_delayer_hold_decode_interval_total",
                                        "Holds inside the protected decode interval")),
      hold_rate(&reg.gauge("prefill_delayer_hold_rate", "Holds over decisions since start")) {}

// The always-present series are registered here, so a scrape before the first request shows
// them at zero.
EngineMetrics::EngineMetrics(MetricsRegistry& reg)
    : reg_(reg),
      running_(&reg.gauge("num_requests_running", "Requests in the running set")),
      waiting_(&reg.gauge("num_requests_waiting", "Requests waiting (preempted included)")),
      kv_usage_(&reg.gauge("kv_cache_usage_perc", "Fraction of KV blocks in use (0-1)")),
      kv_blocks_(&reg.gauge("kv_cache_blocks_total", "KV blocks in the pool")),
      queries_(
          &reg.counter("prefix_cache_queries_total", "Prompt tokens probed in the prefix cache")),
      hits_(&reg.counter("prefix_cache_hits_total", "Prompt tokens served by the prefix cache")),
      prompt_tokens_(&reg.counter("prompt_tokens_total", "Prompt tokens of admitted requests")),
      generation_tokens_(&reg.counter("generation_tokens_total", "Output tokens committed")),
      preemptions_(&reg.counter("num_preemptions_total", "Requests preempted by recompute")),
      host_hits_(&reg.counter("prefix_cache_host_hits_total",
                              "Of the prefix-cache hits, prompt tokens loaded from the host tier")),
      stored_blocks_(&reg.counter("kv_offload_blocks_total",
                                  "KV blocks copied between the GPU and the host tier",
                                  {{"direction", "store"}})),
      loaded_blocks_(&reg.counter("kv_offload_blocks_total",
                                  "KV blocks copied between the GPU and the host tier",
                                  {{"direction", "load"}})),
      host_blocks_(&reg.gauge("kv_host_cache_blocks", "KV blocks of the host tier")),
      host_usage_(&reg.gauge("kv_host_cache_usage_perc",
                             "Fraction of the host tier's blocks holding a cached block (0-1)")),
      finished_stop_(&reg.counter("request_success_total", "Finished requests by reason",
                                  {{"finished_reason", "stop"}})),
      finished_length_(&reg.counter("request_success_total", "Finished requests by reason",
                                    {{"finished_reason", "length"}})),
      finished_abort_(&reg.counter("request_success_total", "Finished requests by reason",
                                   {{"finished_reason", "abort"}})) {}

void EngineMetrics::on_state(const SchedulerStats& s) {
  running_->set(static_cast<double>(s.num_running));
  waiting_->set(static_cast<double>(s.num_waiting));
  kv_usage_->set(s.kv_usage);
  kv_blocks_->set(static_cast<double>(s.num_kv_blocks));
  host_blocks_->set(static_cast<double>(s.num_host_kv_blocks));
  host_usage_->set(s.num_host_kv_blocks > 0 ? static_cast<double>(s.num_host_kv_cached) /
                                                  static_cast<double>(s.num_host_kv_blocks)
                                            : 0.0);
}

void EngineMetrics::on_step(const StepPlan& plan, const StepResult& result,
                            const SchedulerStats& s) {
  on_state(s);
  add_delta(*queries_, s.prefix_cache_queries, last_.prefix_cache_queries);
  add_delta(*hits_, s.prefix_cache_hits, last_.prefix_cache_hits);
  add_delta(*prompt_tokens_, s.prompt_tokens, last_.prompt_tokens);
  add_delta(*generation_tokens_, s.generation_tokens, last_.generation_tokens);
  add_delta(*preemptions_, s.preemptions, last_.preemptions);
  add_delta(*host_hits_, s.prefix_cache_host_hits, last_.prefix_cache_host_hits);
  add_delta(*stored_blocks_, s.kv_stored_blocks, last_.kv_stored_blocks);
  add_delta(*loaded_blocks_, s.kv_loaded_blocks, last_.kv_loaded_blocks);
  add_delta(*finished_stop_, s.finished_stop, last_.finished_stop);
  add_delta(*finished_length_, s.finished_length, last_.finished_length);
  add_delta(*finished_abort_, s.finished_abort, last_.finished_abort);
  if (s.delayer) on_delayer(*s.delayer);
  if (!plan.seqs.empty()) {
    StepSeries& series = step_series(plan.kind);
    series.time->observe(static_cast<double>(result.step_time_ns) * 1e-9);
    series.batch->observe(static_cast<double>(plan.seqs.size()));
    series.tokens->observe(static_cast<double>(plan.num_tokens()));
  }
  last_ = s;
}

void EngineMetrics::on_delayer(const PrefillDelayerCounters& d) {
  if (!delayer_) delayer_.emplace(reg_);
  const DelayerSeries& m = *delayer_;
  const PrefillDelayerCounters was = last_.delayer.value_or(PrefillDelayerCounters{});
  add_delta(*m.first, d.fire_first, was.fire_first);
  add_delta(*m.vacuous, d.fire_vacuous, was.fire_vacuous);
  add_delta(*m.nodecode, d.fire_nodecode, was.fire_nodecode);
  add_delta(*m.kv, d.fire_kv, was.fire_kv);
  add_delta(*m.queue_ms, d.fire_queue_ms, was.fire_queue_ms);
  add_delta(*m.ttft, d.fire_ttft, was.fire_ttft);
  add_delta(*m.partial, d.fire_partial, was.fire_partial);
  add_delta(*m.fill, d.fire_fill, was.fire_fill);
  add_delta(*m.stall, d.fire_stall, was.fire_stall);
  add_delta(*m.hold, d.hold, was.hold);
  add_delta(*m.hold_decode_interval, d.hold_decode_interval, was.hold_decode_interval);
  m.hold_rate->set(d.hold_rate());
}

EngineMetrics::StepSeries& EngineMetrics::step_series(ForwardKind kind) {
  std::optional<StepSeries>& series = steps_[forward_kind_index(kind)];
  if (series) return *series;
  const MetricLabels label{{"kind", forward_kind_name(kind)}};
  series = StepSeries{&reg_.histogram("step_time_seconds", "Forward time by kind",
                                      exponential_buckets(0.0005, 2, 16), label),
                      &reg_.histogram("step_batch_size", "Sequences per forward by kind",
                                      exponential_buckets(1, 2, 11), label),
                      &reg_.histogram("step_num_tokens", "Tokens per forward by kind",
                                      exponential_buckets(1, 2, 16), label)};
  return *series;
}

// The per-request histograms appear with the first request that finishes.
void EngineMetrics::on_first_scheduled(double queue_seconds) {
  if (!queue_time_) {
    queue_time_ = &reg_.histogram("request_queue_time_seconds", "Arrival to first scheduled",
                                  exponential_buckets(0.001, 2, 18));
  }
  queue_time_->observe(queue_seconds);
}

void EngineMetrics::on_finished(const Usage& usage) {
  if (!prompt_len_) {
    prompt_len_ = &reg_.histogram("request_prompt_tokens", "Prompt tokens per finished request",
                                  exponential_buckets(16, 2, 16));
  }
  prompt_len_->observe(static_cast<double>(usage.prompt_tokens));
}

}  // namespace paceline
