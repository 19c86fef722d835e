#include "sched/prefill_delayer_env.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <string>

#include "base/error.h"
#include "base/text.h"

namespace paceline {

namespace {

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  return out;
}

[[noreturn]] void malformed(const char* name, std::string_view value, const char* expected) {
  fail("environment variable {}='{}' is not {}", name, value, expected);
}

bool parse_bool(const char* name, std::string_view raw) {
  const std::string v = lower(trim(raw));
  if (v == "1" || v == "true" || v == "yes" || v == "on") return true;
  if (v == "0" || v == "false" || v == "no" || v == "off") return false;
  malformed(name, raw, "a boolean (1/0, true/false, yes/no, on/off)");
}

int64_t parse_int(const char* name, std::string_view raw) {
  std::string_view v = trim(raw);
  if (!v.empty() && v.front() == '+') v.remove_prefix(1);
  int64_t out = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (v.empty() || ec != std::errc() || end != v.data() + v.size()) {
    malformed(name, raw, "an integer");
  }
  return out;
}

double parse_double(const char* name, std::string_view raw) {
  std::string_view v = trim(raw);
  if (!v.empty() && v.front() == '+') v.remove_prefix(1);
  double out = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (v.empty() || ec != std::errc() || end != v.data() + v.size() || !std::isfinite(out)) {
    malformed(name, raw, "a finite number");
  }
  return out;
}

// Applies one knob: the flag if passed, else the variable if set and non-empty, else the default
// already in `target`.
template <typename T, typename Parse>
void resolve(const std::optional<T>& flag, const char* env_name, const EnvLookup& getenv,
             Parse parse, T& target, KnobSource& source) {
  if (flag) {
    target = *flag;
    source = KnobSource::kFlag;
    return;
  }
  const char* raw = getenv ? getenv(env_name) : nullptr;
  if (raw == nullptr || trim(raw).empty()) return;
  target = parse(env_name, raw);
  source = KnobSource::kEnv;
}

// The same for a knob whose default is "unset".
template <typename T, typename Parse>
void resolve(const std::optional<T>& flag, const char* env_name, const EnvLookup& getenv,
             Parse parse, std::optional<T>& target, KnobSource& source) {
  T value{};
  KnobSource from = KnobSource::kDefault;
  resolve(flag, env_name, getenv, parse, value, from);
  if (from != KnobSource::kDefault) {
    target = value;
    source = from;
  }
}

}  // namespace

std::string_view knob_source_name(KnobSource source) {
  switch (source) {
    case KnobSource::kFlag:
      return "flag";
    case KnobSource::kEnv:
      return "env";
    case KnobSource::kDefault:
      break;
  }
  return "default";
}

PrefillDelayerConfig resolve_prefill_delayer_config(const PrefillDelayerFlags& flags,
                                                    const EnvLookup& getenv) {
  PrefillDelayerSources ignored;
  return resolve_prefill_delayer_config(flags, getenv, ignored);
}

PrefillDelayerConfig resolve_prefill_delayer_config(const PrefillDelayerFlags& flags,
                                                    const EnvLookup& getenv,
                                                    PrefillDelayerSources& sources) {
  PrefillDelayerConfig c;
  PrefillDelayerSources& s = sources;
  s = PrefillDelayerSources{};
  resolve(flags.enabled, "ATOM_ENABLE_PREFILL_DELAYER", getenv, parse_bool, c.enabled, s.enabled);
  resolve(flags.prefill_decode_interval, "ATOM_PREFILL_DECODE_INTERVAL", getenv, parse_int,
          c.prefill_decode_interval, s.prefill_decode_interval);
  resolve(flags.max_queue_ms, "ATOM_PREFILL_DELAYER_MAX_QUEUE_MS", getenv, parse_double,
          c.max_queue_ms, s.max_queue_ms);
  resolve(flags.target_fill, "ATOM_PREFILL_DELAYER_TARGET_FILL", getenv, parse_double,
          c.target_fill, s.target_fill);
  resolve(flags.ttft_max_ticks, "ATOM_PREFILL_DELAYER_TTFT_MAX_TICKS", getenv, parse_int,
          c.ttft_max_ticks, s.ttft_max_ticks);
  resolve(flags.partial_max_ticks, "ATOM_PREFILL_DELAYER_PARTIAL_MAX_TICKS", getenv, parse_int,
          c.partial_max_ticks, s.partial_max_ticks);
  resolve(flags.stall_ticks, "ATOM_PREFILL_DELAYER_STALL_TICKS", getenv, parse_int, c.stall_ticks,
          s.stall_ticks);
  resolve(flags.kv_high, "ATOM_PREFILL_DELAYER_KV_HIGH_WATERMARK", getenv, parse_double, c.kv_high,
          s.kv_high);
  resolve(flags.kv_low, "ATOM_PREFILL_DELAYER_TOKEN_USAGE_LOW_WATERMARK", getenv, parse_double,
          c.kv_low, s.kv_low);
  // Name the variable when a bad value came from the environment; the flag names otherwise.
  if (s.prefill_decode_interval == KnobSource::kEnv && c.prefill_decode_interval < 0) {
    fail("environment variable ATOM_PREFILL_DECODE_INTERVAL='{}' must be >= 0",
         c.prefill_decode_interval);
  }
  if (s.max_queue_ms == KnobSource::kEnv && *c.max_queue_ms < 0) {
    fail("environment variable ATOM_PREFILL_DELAYER_MAX_QUEUE_MS='{}' must be >= 0",
         *c.max_queue_ms);
  }
  return normalize_prefill_delayer_config(c);
}

}  // namespace paceline
