#pragma once
// Time as the scheduler sees it. The engine gives it a SteadyClock; the simulator a VirtualClock
// that it advances by each step's predicted duration. Nothing below the engine reads time another way.
#include <chrono>
#include <cstdint>

namespace paceline {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual int64_t now_ns() const = 0;
};

class SteadyClock final : public Clock {
 public:
  int64_t now_ns() const override {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
};

class VirtualClock final : public Clock {
 public:
  explicit VirtualClock(int64_t start_ns = 0) : now_(start_ns) {}
  int64_t now_ns() const override { return now_; }
  void advance_ns(int64_t delta_ns) { now_ += delta_ns; }
  void set_ns(int64_t t_ns) { now_ = t_ns; }

 private:
  int64_t now_;
};

}  // namespace paceline
