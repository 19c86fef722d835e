#include "engine/request_metrics.h"

#include <vector>

namespace paceline {

namespace {

// vLLM's bucket bounds (vllm/v1/metrics/loggers.py), so that its dashboards' quantiles read the
// same buckets.
const std::vector<double> kTtftBounds = {0.001, 0.005, 0.01, 0.02,  0.04,  0.06,  0.08, 0.1,
                                         0.25,  0.5,   0.75, 1.0,   2.5,   5.0,   7.5,  10.0,
                                         20.0,  40.0,  80.0, 160.0, 640.0, 2560.0};
const std::vector<double> kTokenGapBounds = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,
                                             0.3,  0.4,   0.5,  0.75,  1.0, 2.5,  5.0,
                                             7.5,  10.0,  20.0, 40.0,  80.0};
const std::vector<double> kRequestBounds = {0.3,  0.5,   0.8,   1.0,   1.5,   2.0,    2.5,
                                            5.0,  10.0,  15.0,  20.0,  30.0,  40.0,   50.0,
                                            60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};

double seconds(int64_t ns) {
  return static_cast<double>(ns) * 1e-9;
}

}  // namespace

RequestMetrics::RequestMetrics(MetricsRegistry& reg, int64_t max_model_len)
    : ttft_(&reg.histogram("time_to_first_token_seconds", "Arrival to the first output token",
                           kTtftBounds)),
      itl_(&reg.histogram("inter_token_latency_seconds",
                          "Time between two steps that gave a request tokens", kTokenGapBounds)),
      tpot_(&reg.histogram("time_per_output_token_seconds",
                           "The inter-token latency samples again (vLLM's older name)",
                           kTokenGapBounds)),
      request_tpot_(&reg.histogram("request_time_per_output_token_seconds",
                                   "Per request: decode time over output tokens after the first",
                                   kTokenGapBounds)),
      e2e_(&reg.histogram("e2e_request_latency_seconds", "Arrival to finished", kRequestBounds)),
      queue_(&reg.histogram("request_queue_time_seconds", "Arrival to first scheduled",
                            kRequestBounds)),
      prefill_(&reg.histogram("request_prefill_time_seconds", "First scheduled to first token",
                              kRequestBounds)),
      decode_(&reg.histogram("request_decode_time_seconds", "First token to last token",
                             kRequestBounds)),
      inference_(&reg.histogram("request_inference_time_seconds", "First scheduled to last token",
                                kRequestBounds)),
      prompt_tokens_(&reg.histogram("request_prompt_tokens", "Prompt tokens per finished request",
                                    one_two_five_buckets(max_model_len))),
      generation_tokens_(&reg.histogram("request_generation_tokens",
                                        "Output tokens per finished request",
                                        one_two_five_buckets(max_model_len))),
      max_tokens_(&reg.histogram("request_params_max_tokens", "max_tokens of finished requests",
                                 one_two_five_buckets(max_model_len))) {}

void RequestMetrics::on_added(uint64_t id, int64_t max_tokens) {
  live_[id].max_tokens = max_tokens;
}

void RequestMetrics::on_output(const RequestOutput& out, int64_t now_ns) {
  auto it = live_.find(out.request_id);
  if (it == live_.end()) return;  // not added through on_added
  Live& live = it->second;
  if (!out.new_token_ids.empty()) {
    if (live.first_token_ns < 0) {
      live.first_token_ns = now_ns;
      ttft_->observe(seconds(now_ns - out.arrival_ns));
    } else {
      const double gap = seconds(now_ns - live.last_token_ns);
      itl_->observe(gap);
      tpot_->observe(gap);
    }
    live.last_token_ns = now_ns;
  }
  if (out.finished) {
    on_finished(out, live, now_ns);
    live_.erase(it);
  }
}

// A request cancelled before it was scheduled never ran: it counts in the end-to-end latency and
// the token counts, not in the phases. One cancelled before its first token has a prefill (up to
// the cancel) and no decode.
void RequestMetrics::on_finished(const RequestOutput& out, const Live& live, int64_t now_ns) {
  e2e_->observe(seconds(now_ns - out.arrival_ns));
  prompt_tokens_->observe(static_cast<double>(out.usage.prompt_tokens));
  generation_tokens_->observe(static_cast<double>(out.usage.completion_tokens));
  max_tokens_->observe(static_cast<double>(live.max_tokens));
  if (out.first_scheduled_ns < 0) return;
  const int64_t scheduled = out.first_scheduled_ns;
  queue_->observe(seconds(scheduled - out.arrival_ns));
  if (live.first_token_ns < 0) {
    prefill_->observe(seconds(now_ns - scheduled));
    decode_->observe(0.0);
    inference_->observe(seconds(now_ns - scheduled));
    return;
  }
  const int64_t decode_ns = live.last_token_ns - live.first_token_ns;
  prefill_->observe(seconds(live.first_token_ns - scheduled));
  decode_->observe(seconds(decode_ns));
  inference_->observe(seconds(live.last_token_ns - scheduled));
  if (out.usage.completion_tokens > 1) {
    request_tpot_->observe(seconds(decode_ns) /
                           static_cast<double>(out.usage.completion_tokens - 1));
  }
}

}  // namespace paceline
