#pragma once
// Resolves the PrefillDelayer knobs from CLI flags and ATOM's environment variable names, so a
// user can paste an ATOM recipe's env block unchanged. A flag wins over the environment, the
// environment over the default; where each effective value came from is kept for the startup line.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "sched/prefill_delayer.h"

namespace paceline {

// Each member is set only when the user passed the flag.
struct PrefillDelayerFlags {
  std::optional<bool> enabled;                     // --prefill-delayer / --no-prefill-delayer
  std::optional<int64_t> prefill_decode_interval;  // --prefill-decode-interval
  std::optional<double> max_queue_ms;              // --prefill-delayer-max-queue-ms
  std::optional<double> target_fill;               // --prefill-delayer-target-fill
  std::optional<int64_t> ttft_max_ticks;           // --prefill-delayer-ttft-max-ticks
  std::optional<int64_t> partial_max_ticks;        // --prefill-delayer-partial-max-ticks
  std::optional<int64_t> stall_ticks;              // --prefill-delayer-stall-ticks
  std::optional<double> kv_high;                   // --prefill-delayer-kv-high
  std::optional<double> kv_low;                    // --prefill-delayer-kv-low
};

enum class KnobSource { kDefault, kEnv, kFlag };
std::string_view knob_source_name(KnobSource source);  // "default", "env", "flag"

struct PrefillDelayerSources {
  KnobSource enabled = KnobSource::kDefault;
  KnobSource prefill_decode_interval = KnobSource::kDefault;
  KnobSource max_queue_ms = KnobSource::kDefault;
  KnobSource target_fill = KnobSource::kDefault;
  KnobSource ttft_max_ticks = KnobSource::kDefault;
  KnobSource partial_max_ticks = KnobSource::kDefault;
  KnobSource stall_ticks = KnobSource::kDefault;
  KnobSource kv_high = KnobSource::kDefault;
  KnobSource kv_low = KnobSource::kDefault;
};

// Looks a variable up: returns nullptr when unset. Tests pass a map; main passes std::getenv.
using EnvLookup = std::function<const char*(const char*)>;

// The effective config (validated and normalized as the delayer would: see
// normalize_prefill_delayer_config). max_num_batched_tokens is left at its default: the caller
// copies the scheduler's value in. Environment values: integers, decimals, booleans
// 1/0/true/false/yes/no/on/off (any case); an empty value counts as unset. A malformed value
// throws paceline::Error naming the variable and the value.
PrefillDelayerConfig resolve_prefill_delayer_config(const PrefillDelayerFlags& flags,
                                                    const EnvLookup& getenv);
// The same, also recording where each value came from (for PrefillDelayer::describe(sources)).
PrefillDelayerConfig resolve_prefill_delayer_config(const PrefillDelayerFlags& flags,
                                                    const EnvLookup& getenv,
                                                    PrefillDelayerSources& sources);

}  // namespace paceline
