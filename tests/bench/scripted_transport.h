#pragma once
// A fake server for replay tests: every request gets a scripted answer (TTFT, spacing of chunks,
// tokens, cached tokens, or an error) as events on a virtual clock. Deterministic to the ns.
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <queue>
#include <set>
#include <string>
#include <vector>

#include "base/clock.h"
#include "bench/virtual_driver.h"

namespace paceline::bench::test_util {

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kSec = 1'000'000'000;

struct Reply {
  int64_t ttft_ns = 100 * kMs;  // send to first chunk
  int64_t itl_ns = 10 * kMs;    // between chunks
  int64_t done_after_ns = 0;    // last chunk to the end of the stream (usage chunk)
  int64_t tokens = -1;          // completion tokens, one per chunk; -1: the spec's osl
  int64_t cached_tokens = 0;
  bool send_usage = true;
  std::optional<int> error_status;  // answer with an error instead
  std::string error_text = "scripted error";
  int64_t error_after_ns = 50 * kMs;
};

using Script = std::function<Reply(const RequestSpec&)>;

class ScriptedTransport final : public VirtualTransport {
 public:
  struct Sent {
    RequestSpec spec;
    int64_t at_ns;
  };

  explicit ScriptedTransport(VirtualClock& clock, Script script = nullptr)
      : clock_(clock), script_(std::move(script)) {}

  void send(const RequestSpec& spec, StreamCallbacks callbacks) override {
    int64_t now = clock_.now_ns();
    sent_.push_back(Sent{spec, now});
    callbacks_[spec.id] = std::move(callbacks);
    live_.insert(spec.id);
    max_in_flight_ = std::max(max_in_flight_, static_cast<int>(live_.size()));
    Reply r = script_ ? script_(spec) : Reply{};
    if (r.error_status) {
      push(now + r.error_after_ns, spec.id, Kind::kError, 0, {}, *r.error_status, r.error_text);
      return;
    }
    int64_t tokens = r.tokens >= 0 ? r.tokens : spec.osl;
    int64_t t = now + r.ttft_ns;
    for (int64_t k = 0; k < tokens; ++k) {
      if (k == 0) push(t, spec.id, Kind::kFirst);
      push(t, spec.id, Kind::kChunk, 1);
      if (k + 1 < tokens) t += r.itl_ns;
    }
    Usage usage;
    if (r.send_usage) usage = Usage{spec.isl, tokens, r.cached_tokens};
    push(t + r.done_after_ns, spec.id, Kind::kDone, 0, usage);
  }

  void cancel(uint64_t id) override {
    cancelled_.push_back(id);
    live_.erase(id);
  }

  std::optional<int64_t> next_event_ns() const override {
    if (events_.empty()) return std::nullopt;
    return events_.top().t;
  }

  void advance_to(int64_t now_ns) override {
    while (!events_.empty() && events_.top().t <= now_ns) {
      Event e = events_.top();
      events_.pop();
      if (!live_.count(e.id)) continue;  // cancelled
      StreamCallbacks& cb = callbacks_.at(e.id);
      switch (e.kind) {
        case Kind::kFirst:
          cb.on_first_token(e.t);
          break;
        case Kind::kChunk:
          cb.on_chunk(e.t, e.n);
          break;
        case Kind::kDone:
          live_.erase(e.id);
          cb.on_done(e.t, e.usage);
          break;
        case Kind::kError:
          live_.erase(e.id);
          cb.on_error(e.t, e.status, e.text);
          break;
      }
    }
  }

  const std::vector<Sent>& sent() const { return sent_; }
  const std::vector<uint64_t>& cancelled() const { return cancelled_; }
  int max_in_flight() const { return max_in_flight_; }

 private:
  enum class Kind { kFirst, kChunk, kDone, kError };
  struct Event {
    int64_t t;
    uint64_t seq;
    uint64_t id;
    Kind kind;
    int64_t n = 0;
    Usage usage;
    int status = 0;
    std::string text;
    bool operator>(const Event& o) const { return t != o.t ? t > o.t : seq > o.seq; }
  };

  void push(int64_t t, uint64_t id, Kind kind, int64_t n = 0, Usage usage = {}, int status = 0,
            std::string text = {}) {
    events_.push(Event{t, seq_++, id, kind, n, usage, status, std::move(text)});
  }

  VirtualClock& clock_;
  Script script_;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  std::map<uint64_t, StreamCallbacks> callbacks_;
  std::set<uint64_t> live_;
  std::vector<Sent> sent_;
  std::vector<uint64_t> cancelled_;
  uint64_t seq_ = 0;
  int max_in_flight_ = 0;
};

}  // namespace paceline::bench::test_util
