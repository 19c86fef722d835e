#pragma once
// The driver's view of a replayer: an event-driven state machine that never reads a clock. The
// driver asks when its next timer is due, waits (really, or by jumping a virtual clock), and tells
// it the time; transports report answers through callbacks stamped with the same clock. A real-time
// driver (HTTP) and a virtual-time driver (tests, `paceline sim`) therefore share every rule.
//
// Single-threaded: callbacks and calls come from one thread. A transport callback can arm a timer
// (often due at once), so a driver asks next_timer_ns() again after start(), after advance_to()
// and after every batch of callbacks.
#include <cstdint>
#include <optional>

#include "bench/record.h"

namespace paceline::bench {

class Replay {
 public:
  virtual ~Replay() = default;

  // Begins the run at `now_ns`; records are kept relative to it.
  virtual void start(int64_t now_ns) = 0;
  // The earliest pending timer; nullopt when there is none (waiting on answers, or finished).
  virtual std::optional<int64_t> next_timer_ns() const = 0;
  // Fires every timer due at or before `now_ns`, in time order.
  virtual void advance_to(int64_t now_ns) = 0;
  // True once the run is over: duration reached and drained, aborted, or cancelled.
  virtual bool finished() const = 0;
  // Ctrl-C: stop now; requests in flight are abandoned and recorded as incomplete.
  virtual void cancel(int64_t now_ns) = 0;

  virtual const RecordLog& log() const = 0;
};

}  // namespace paceline::bench
