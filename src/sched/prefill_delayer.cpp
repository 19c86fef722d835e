#include "sched/prefill_delayer.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "base/error.h"
#include "sched/prefill_delayer_env.h"

namespace paceline {

namespace {

void require_finite(double value, const char* name) {
  if (!std::isfinite(value))
    fail("prefill delayer: {} must be a finite number, got {}", name, value);
}

std::string optional_value(const std::optional<double>& value) {
  return value ? fmt::format("{}", *value) : std::string("none");
}

// One knob per entry, in the order the line prints them; `source` is empty without sources.
struct KnobText {
  const char* name;
  std::string value;
  KnobSource source;
};

std::string format_line(const PrefillDelayerConfig& c, const PrefillDelayerSources* s) {
  const PrefillDelayerSources none;
  const PrefillDelayerSources& src = s ? *s : none;
  const KnobText knobs[] = {
      {"enabled", c.enabled ? "true" : "false", src.enabled},
      {"interval", fmt::format("{}", c.prefill_decode_interval), src.prefill_decode_interval},
      {"max_queue_ms", optional_value(c.max_queue_ms), src.max_queue_ms},
      {"target_fill", fmt::format("{}", c.target_fill), src.target_fill},
      {"ttft_max_ticks", fmt::format("{}", c.ttft_max_ticks), src.ttft_max_ticks},
      {"partial_max_ticks", fmt::format("{}", c.partial_max_ticks), src.partial_max_ticks},
      {"stall_ticks", fmt::format("{}", c.stall_ticks), src.stall_ticks},
      {"kv_high", fmt::format("{}", c.kv_high), src.kv_high},
      {"kv_low", optional_value(c.kv_low), src.kv_low},
  };
  std::string line = "PrefillDelayer initialized";
  for (const auto& k : knobs) {
    line += fmt::format(" {}={}", k.name, k.value);
    if (s) line += fmt::format("({})", knob_source_name(k.source));
  }
  line += fmt::format(" max_num_batched_tokens={}", c.max_num_batched_tokens);
  return line;
}

}  // namespace

PrefillDelayerConfig normalize_prefill_delayer_config(PrefillDelayerConfig c) {
  if (c.prefill_decode_interval < 0) {
    fail("prefill delayer: --prefill-decode-interval must be >= 0, got {}",
         c.prefill_decode_interval);
  }
  if (c.max_queue_ms) {
    require_finite(*c.max_queue_ms, "--prefill-delayer-max-queue-ms");
    if (*c.max_queue_ms < 0) {
      fail("prefill delayer: --prefill-delayer-max-queue-ms must be >= 0, got {}", *c.max_queue_ms);
    }
  }
  require_finite(c.target_fill, "--prefill-delayer-target-fill");
  require_finite(c.kv_high, "--prefill-delayer-kv-high");
  if (c.kv_low) require_finite(*c.kv_low, "--prefill-delayer-kv-low");
  if (c.max_num_batched_tokens < 1) {
    fail("prefill delayer: max_num_batched_tokens must be >= 1, got {}", c.max_num_batched_tokens);
  }
  c.target_fill = std::clamp(c.target_fill, 0.05, 1.0);
  c.ttft_max_ticks = std::max<int64_t>(c.ttft_max_ticks, 1);
  c.partial_max_ticks = std::max<int64_t>(c.partial_max_ticks, 1);
  c.stall_ticks = std::max<int64_t>(c.stall_ticks, 1);
  return c;
}

PrefillDelayer::PrefillDelayer(const PrefillDelayerConfig& config)
    : config_(normalize_prefill_delayer_config(config)) {}

void PrefillDelayer::on_prefill_ran() {
  ran_ = true;
}

void PrefillDelayer::reset() {
  hold_ticks_ = 0;
  stall_ = 0;
  prev_pending_ = -1;
}

bool PrefillDelayer::fire(int64_t& counter) {
  ++counter;
  reset();
  return true;
}

bool PrefillDelayer::hold() {
  ++hold_ticks_;
  ++counters_.hold;
  return false;
}

bool PrefillDelayer::allow_prefill(const PrefillDelayerInputs& in) {
  auto& n = counters_;
  ++n.decisions;
  if (ran_) {
    interval_left_ = config_.prefill_decode_interval;
    ran_ = false;
  }
  if (first_) {
    first_ = false;
    return fire(n.fire_first);
  }
  if (interval_left_ > 0) {
    --interval_left_;
    // Protected decode pass: an interval hold is not part of a hold episode.
    if (in.prefillable && in.running_decode > 0) {
      ++n.hold;
      ++n.hold_decode_interval;
      return false;
    }
  }
  if (!in.prefillable) return fire(n.fire_vacuous);
  if (in.running_decode == 0) return fire(n.fire_nodecode);
  const bool kv_low = config_.kv_low && in.kv_usage < *config_.kv_low;
  if (in.kv_usage >= config_.kv_high || kv_low) return fire(n.fire_kv);
  if (config_.max_queue_ms && in.oldest_wait_ms >= *config_.max_queue_ms) {
    return fire(n.fire_queue_ms);
  }
  if (hold_ticks_ >= config_.ttft_max_ticks) return fire(n.fire_ttft);
  if (in.has_partial && hold_ticks_ >= config_.partial_max_ticks) return fire(n.fire_partial);
  const double fill_tokens =
      config_.target_fill * static_cast<double>(config_.max_num_batched_tokens);
  if (static_cast<double>(in.pending_tokens) >= fill_tokens) return fire(n.fire_fill);
  stall_ = in.pending_tokens <= prev_pending_ ? stall_ + 1 : 0;
  prev_pending_ = in.pending_tokens;
  if (stall_ >= config_.stall_ticks) return fire(n.fire_stall);
  return hold();
}

std::string PrefillDelayer::describe() const {
  return format_line(config_, nullptr);
}

std::string PrefillDelayer::describe(const PrefillDelayerSources& sources) const {
  return format_line(config_, &sources);
}

std::string PrefillDelayer::stats_line() const {
  const auto& n = counters_;
  return fmt::format(
      "PrefillDelayer stats decisions={} hold={} hold_rate={:.3f} hold_decode_interval={} "
      "fire_first={} fire_vacuous={} fire_nodecode={} fire_kv={} fire_queue_ms={} fire_ttft={} "
      "fire_partial={} fire_fill={} fire_stall={}",
      n.decisions, n.hold, n.hold_rate(), n.hold_decode_interval, n.fire_first, n.fire_vacuous,
      n.fire_nodecode, n.fire_kv, n.fire_queue_ms, n.fire_ttft, n.fire_partial, n.fire_fill,
      n.fire_stall);
}

std::optional<std::string> PrefillDelayer::stats_line_if_due() {
  if (counters_.decisions < next_stats_at_) return std::nullopt;
  next_stats_at_ = (counters_.decisions / kStatsEveryDecisions + 1) * kStatsEveryDecisions;
  return stats_line();
}

}  // namespace paceline
