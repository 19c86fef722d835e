#include "engine/engine_metrics.h"

#include <algorithm>
#include <string>

namespace paceline {

namespace {

void add_delta(Counter& c, int64_t now, int64_t before) {
  if (now > before) c.inc(static_cast<double>(now - before));
}

const ForwardKind kForwardKinds[] = {ForwardKind::kPrefill, ForwardKind::kDecode,
                                     ForwardKind::kMixed};

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

EngineMetrics::SpecSeries::SpecSeries(MetricsRegistry& reg, int32_t k)
    : drafts(&reg.counter("spec_decode_num_drafts_total", "Speculative verify rows")),
      draft_tokens(
          &reg.counter("spec_decode_num_draft_tokens_total", "Draft tokens of the verify rows")),
      accepted(&reg.counter("spec_decode_num_accepted_tokens_total",
                            "Draft tokens accepted (committed beyond the bonus token)")) {
  for (int32_t i = 0; i < k; ++i) {
    accepted_per_pos.push_back(&reg.counter("spec_decode_num_accepted_tokens_per_pos_total",
                                            "Draft tokens accepted, by draft position",
                                            {{"position", std::to_string(i)}}));
  }
}

// Every series is registered here, so a scrape before the first request shows them at zero.
EngineMetrics::EngineMetrics(MetricsRegistry& reg, const EngineMetricsShape& shape)
    : reg_(reg),
      running_(&reg.gauge("num_requests_running", "Requests in the running set")),
      waiting_(&reg.gauge("num_requests_waiting", "Requests waiting (preempted included)")),
      kv_usage_(&reg.gauge("kv_cache_usage_perc", "Fraction of KV blocks in use (0-1)")),
      kv_blocks_(&reg.gauge("kv_cache_blocks", "KV blocks in the pool")),
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
      load_failures_(&reg.counter("kv_load_failures_total",
                                  "KV blocks whose load from the host tier failed (recomputed)")),
      fp8_clamped_(&reg.counter("kv_cache_fp8_clamped_total",
                                "K/V values an FP8 KV cache's store clamped to +-448 (or NaN)")),
      host_blocks_(&reg.gauge("kv_host_cache_blocks", "KV blocks of the host tier")),
      host_usage_(&reg.gauge("kv_host_cache_usage_perc",
                             "Fraction of the host tier's blocks holding a cached block (0-1)")),
      finished_stop_(&reg.counter("request_success_total", "Finished requests by reason",
                                  {{"finished_reason", "stop"}})),
      finished_length_(&reg.counter("request_success_total", "Finished requests by reason",
                                    {{"finished_reason", "length"}})),
      finished_abort_(&reg.counter("request_success_total", "Finished requests by reason",
                                   {{"finished_reason", "abort"}})),
      requests_(reg, shape.max_model_len) {
  if (shape.delayer) delayer_.emplace(reg);
  if (shape.speculative_tokens > 0) spec_.emplace(reg, shape.speculative_tokens);
  for (ForwardKind kind : kForwardKinds) {
    const MetricLabels label{{"kind", forward_kind_name(kind)}};
    steps_[forward_kind_index(kind)] = {
        &reg.histogram("step_time_seconds", "Forward time by kind",
                       exponential_buckets(0.0005, 2, 16), label),
        &reg.histogram("step_batch_size", "Sequences per forward by kind",
                       exponential_buckets(1, 2, 11), label),
        &reg.histogram("step_num_tokens", "Tokens per forward by kind",
                       exponential_buckets(1, 2, 16), label)};
  }
}

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
  add_delta(*load_failures_, s.kv_load_failures, last_.kv_load_failures);
  if (result.kv_fp8_clamped > 0) fp8_clamped_->inc(static_cast<double>(result.kv_fp8_clamped));
  add_delta(*finished_stop_, s.finished_stop, last_.finished_stop);
  add_delta(*finished_length_, s.finished_length, last_.finished_length);
  add_delta(*finished_abort_, s.finished_abort, last_.finished_abort);
  if (s.delayer) on_delayer(*s.delayer);
  if (!plan.seqs.empty()) {
    const StepSeries& series = steps_[forward_kind_index(plan.kind)];
    series.time->observe(static_cast<double>(result.step_time_ns) * 1e-9);
    series.batch->observe(static_cast<double>(plan.seqs.size()));
    series.tokens->observe(static_cast<double>(plan.num_tokens()));
  }
  last_ = s;
}

void EngineMetrics::on_delayer(const PrefillDelayerCounters& d) {
  if (!delayer_) delayer_.emplace(reg_);  // a delayer the shape did not announce
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

void EngineMetrics::on_outputs(const StepPlan& plan, std::span<const RequestOutput> outputs,
                               int64_t now_ns) {
  for (const RequestOutput& out : outputs) requests_.on_output(out, now_ns);
  if (spec_) on_spec(plan, outputs);
}

// A verify row asks for k + 1 logits (k drafts and the bonus token); what it committed beyond
// the first token is what was accepted. The outputs follow the plan's row order, skipping rows
// that gave nothing (a middle prefill chunk, a row cancelled during its step).
void EngineMetrics::on_spec(const StepPlan& plan, std::span<const RequestOutput> outputs) {
  size_t o = 0;
  for (const ScheduledSeq& row : plan.seqs) {
    if (o == outputs.size()) return;
    if (outputs[o].request_id != row.request_id) continue;
    const RequestOutput& out = outputs[o++];
    const int64_t drafts = row.num_logits - 1;
    if (drafts < 1) continue;
    const auto committed = static_cast<int64_t>(out.new_token_ids.size());
    const int64_t accepted = std::clamp<int64_t>(committed - 1, 0, drafts);
    spec_->drafts->inc();
    spec_->draft_tokens->inc(static_cast<double>(drafts));
    spec_->accepted->inc(static_cast<double>(accepted));
    for (int64_t i = 0; i < accepted && i < static_cast<int64_t>(spec_->accepted_per_pos.size());
         ++i) {
      spec_->accepted_per_pos[static_cast<size_t>(i)]->inc();
    }
  }
}

}  // namespace paceline
