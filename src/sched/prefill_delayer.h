#pragma once
// The PrefillDelayer (../shared/specs/prefill-delayer.md): asked once per scheduler pass whether
// prefill may run; protects decode for N passes after each prefill forward and coalesces arriving
// prefills up to fill, stall, tick and queue-age bounds. Deterministic: no clock, no I/O.
#include <cstdint>
#include <optional>
#include <string>

namespace paceline {

struct PrefillDelayerSources;  // sched/prefill_delayer_env.h

struct PrefillDelayerConfig {
  bool enabled = true;                  // --prefill-delayer / ATOM_ENABLE_PREFILL_DELAYER
  int64_t prefill_decode_interval = 0;  // ATOM_PREFILL_DECODE_INTERVAL
  std::optional<double> max_queue_ms;   // ATOM_PREFILL_DELAYER_MAX_QUEUE_MS
  double target_fill = 0.9;             // clamped to [0.05, 1]
  int64_t ttft_max_ticks = 200;
  int64_t partial_max_ticks = 100;
  int64_t stall_ticks = 10;
  double kv_high = 0.9;
  std::optional<double> kv_low;
  int64_t max_num_batched_tokens = 16384;

  // Constructed only when enabled and (interval > 0 or a queue limit is set).
  bool active() const {
    return enabled && (prefill_decode_interval > 0 || max_queue_ms.has_value());
  }
};

// The effective config: a negative interval, a negative queue limit, a non-finite value or
// max_num_batched_tokens < 1 throws paceline::Error; tick bounds below 1 become 1; target_fill is
// clamped to [0.05, 1]. The constructor applies it; so does resolve_prefill_delayer_config.
PrefillDelayerConfig normalize_prefill_delayer_config(PrefillDelayerConfig config);

// What the scheduler measures before asking.
struct PrefillDelayerInputs {
  bool prefillable = false;
  int64_t pending_tokens = 0;
  int64_t running_decode = 0;
  double kv_usage = 0.0;
  bool has_partial = false;
  double oldest_wait_ms = 0.0;  // only read when max_queue_ms is set
};

struct PrefillDelayerCounters {
  int64_t decisions = 0;
  int64_t fire_first = 0, fire_vacuous = 0, fire_nodecode = 0, fire_kv = 0, fire_queue_ms = 0,
          fire_ttft = 0, fire_partial = 0, fire_fill = 0, fire_stall = 0;
  int64_t hold = 0;
  int64_t hold_decode_interval = 0;
  double hold_rate() const { return decisions ? static_cast<double>(hold) / decisions : 0.0; }
};

class PrefillDelayer {
 public:
  explicit PrefillDelayer(const PrefillDelayerConfig& config);  // validates; throws paceline::Error
  // One call per scheduler pass: true when prefill may run this pass.
  bool allow_prefill(const PrefillDelayerInputs& in);
  // After each executed forward that contained prefill rows (every chunk counts).
  void on_prefill_ran();
  const PrefillDelayerCounters& counters() const { return counters_; }
  const PrefillDelayerConfig& config() const { return config_; }
  // The one startup line: "PrefillDelayer initialized ..." with the effective values.
  std::string describe() const;
  // The same with each value's source after it: "interval=4(env)".
  std::string describe(const PrefillDelayerSources& sources) const;

  // Counters and hold rate on one line: "PrefillDelayer stats decisions=... hold_rate=...".
  std::string stats_line() const;
  // stats_line() once every kStatsEveryDecisions decisions, else nothing: call after each pass
  // and log what it returns.
  static constexpr int64_t kStatsEveryDecisions = 1000;
  std::optional<std::string> stats_line_if_due();

 private:
  PrefillDelayerConfig config_;
  PrefillDelayerCounters counters_;
  int64_t hold_ticks_ = 0;
  int64_t stall_ = 0;
  int64_t prev_pending_ = -1;
  bool first_ = true;
  int64_t interval_left_ = 0;
  bool ran_ = false;
  int64_t next_stats_at_ = kStatsEveryDecisions;

  bool fire(int64_t& counter);
  bool hold();
  void reset();
};

}  // namespace paceline
