#pragma once
// A recorded time (seconds or ms from a trace, possibly scaled) as a wait in nanoseconds that is
// safe to add to a clock reading. Traces are input: a time of 1e300 s must wait "for ever", not
// wrap into a negative wait that sends at once (llround of a value beyond int64 is unspecified,
// and on x86 it is INT64_MIN).
#include <cmath>
#include <cstdint>

namespace paceline::bench {

// About 36 years: longer than any run, and far enough below INT64_MAX that a clock reading plus
// this never overflows.
inline constexpr int64_t kFarFutureNs = int64_t{1} << 60;

// `ns` rounded, with negative and NaN waits as 0 and anything beyond kFarFutureNs as kFarFutureNs.
inline int64_t wait_ns_from(double ns) {
  if (!(ns > 0)) return 0;
  if (ns >= static_cast<double>(kFarFutureNs)) return kFarFutureNs;
  return static_cast<int64_t>(std::llround(ns));
}

}  // namespace paceline::bench
