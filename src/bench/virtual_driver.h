#pragma once
// Running a replay in virtual time: the clock jumps from event to event, so an hour of traffic
// replays in moments and every timing is exact. Tests use it with a scripted transport; `paceline
// sim` uses it with the engine and a cost model behind the transport.
#include <cstdint>
#include <optional>

#include "base/clock.h"
#include "bench/replay.h"
#include "bench/transport.h"

namespace paceline::bench {

// A transport whose answers are events at known virtual times.
class VirtualTransport : public Transport {
 public:
  // The time of the earliest undelivered callback; nullopt when none is pending.
  virtual std::optional<int64_t> next_event_ns() const = 0;
  // Delivers every callback due at or before `now_ns`, in time order.
  virtual void advance_to(int64_t now_ns) = 0;
};

// Starts `replay` at the clock's time and runs it to the end. At each step the clock jumps to the
// earlier of the transport's next event and the replayer's next timer; the transport's callbacks
// at a time go before the replayer's timers at that same time. Fails if the run cannot finish.
void run_virtual(Replay& replay, VirtualTransport& transport, VirtualClock& clock);

}  // namespace paceline::bench
