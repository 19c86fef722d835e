#include "bench/realtime_driver.h"

#include <csignal>

namespace paceline::bench {

namespace {

std::chrono::steady_clock::time_point to_time_point(int64_t ns) {
  return std::chrono::steady_clock::time_point(std::chrono::nanoseconds(ns));
}

}  // namespace

RealtimeDriver::RealtimeDriver(boost::asio::io_context& io, Replay& replay, const Clock& clock)
    : io_(io), replay_(replay), clock_(clock), timer_(io), tick_timer_(io), signals_(io) {}

void RealtimeDriver::set_ticker(std::chrono::milliseconds interval,
                                std::function<void(int64_t)> tick) {
  tick_interval_ = interval;
  tick_ = std::move(tick);
}

void RealtimeDriver::run() {
  running_ = true;
  signals_.add(SIGINT);
  signals_.add(SIGTERM);
  signals_.async_wait([this](const boost::system::error_code& ec, int) {
    if (ec || done_) return;
    interrupted_ = true;
    replay_.cancel(clock_.now_ns());
    reschedule();
  });
  started_ns_ = clock_.now_ns();
  replay_.start(started_ns_);
  if (tick_) {
    tick_timer_.expires_at(to_time_point(started_ns_));
    arm_tick();
  }
  reschedule();
  if (!done_) io_.run();
  running_ = false;
}

void RealtimeDriver::poke() {
  if (done_ || !running_) return;
  replay_.advance_to(clock_.now_ns());
  reschedule();
}

void RealtimeDriver::reschedule() {
  if (done_) return;
  if (replay_.finished()) return finish();
  std::optional<int64_t> next = replay_.next_timer_ns();
  if (next == armed_at_) return;
  armed_at_ = next;
  const uint64_t generation = ++generation_;
  if (!next) {
    timer_.cancel();
    return;
  }
  timer_.expires_at(to_time_point(*next));  // cancels an earlier wait
  timer_.async_wait([this, generation](const boost::system::error_code& ec) {
    if (ec || done_ || generation != generation_) return;
    armed_at_.reset();
    replay_.advance_to(clock_.now_ns());
    reschedule();
  });
}

void RealtimeDriver::arm_tick() {
  tick_timer_.expires_at(tick_timer_.expiry() + tick_interval_);
  tick_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || done_) return;
    tick_(clock_.now_ns());
    arm_tick();
  });
}

void RealtimeDriver::finish() {
  done_ = true;
  timer_.cancel();
  tick_timer_.cancel();
  boost::system::error_code ignored;
  signals_.cancel(ignored);
  signals_.clear(ignored);
  if (on_finished_) on_finished_();
  io_.stop();
}

}  // namespace paceline::bench
