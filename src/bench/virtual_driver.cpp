#include "bench/virtual_driver.h"

#include <algorithm>

#include "base/error.h"

namespace paceline::bench {

void run_virtual(Replay& replay, VirtualTransport& transport, VirtualClock& clock) {
  replay.start(clock.now_ns());
  while (!replay.finished()) {
    std::optional<int64_t> timer = replay.next_timer_ns();
    std::optional<int64_t> event = transport.next_event_ns();
    if (!timer && !event) {
      fail("the replay cannot finish: no request in flight and no timer pending");
    }
    int64_t t = std::min(timer.value_or(INT64_MAX), event.value_or(INT64_MAX));
    clock.set_ns(std::max(t, clock.now_ns()));
    transport.advance_to(clock.now_ns());
    replay.advance_to(clock.now_ns());
  }
}

}  // namespace paceline::bench
