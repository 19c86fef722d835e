#pragma once
// Running a replay in real time on an Asio event loop, the same loop that carries its HTTP
// streams: one steady timer armed at the replayer's next timer, advance_to(now) when it expires
// and after every answered request (the transport's after_finish hook calls poke()), until the
// replay finishes. SIGINT (Ctrl-C) and SIGTERM cancel the replay: requests in flight are recorded
// as incomplete and the run's files are still written, marked cancelled.
//
// Everything runs on the thread that calls run(), so the replayer needs no locks, and a send goes
// out within one loop turn of its due time: that lateness is the schedule lag in every record.
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>

#include "base/clock.h"
#include "bench/replay.h"

namespace paceline::bench {

class RealtimeDriver {
 public:
  // `clock` must be the steady clock the transport stamps answers with.
  RealtimeDriver(boost::asio::io_context& io, Replay& replay, const Clock& clock);

  // Called every `interval` while the run goes (the progress line), with the time.
  void set_ticker(std::chrono::milliseconds interval, std::function<void(int64_t now_ns)> tick);
  // Called once when the replay has finished, before the loop stops: close connections, stop
  // scrapers. Whatever is still queued on the loop afterwards is dropped.
  void set_on_finished(std::function<void()> hook) { on_finished_ = std::move(hook); }

  // Starts the replay now and runs the loop until the replay has finished.
  void run();
  // Something may have armed a timer (a request was answered): advance and re-arm.
  void poke();

  bool interrupted() const { return interrupted_; }
  int64_t started_ns() const { return started_ns_; }

 private:
  void reschedule();
  void arm_tick();
  void finish();

  boost::asio::io_context& io_;
  Replay& replay_;
  const Clock& clock_;
  boost::asio::steady_timer timer_;
  boost::asio::steady_timer tick_timer_;
  boost::asio::signal_set signals_;
  std::optional<int64_t> armed_at_;
  uint64_t generation_ = 0;  // tells a stale timer completion from the current one
  std::chrono::milliseconds tick_interval_{1000};
  std::function<void(int64_t)> tick_;
  std::function<void()> on_finished_;
  int64_t started_ns_ = 0;
  bool running_ = false;
  bool done_ = false;
  bool interrupted_ = false;
};

}  // namespace paceline::bench
