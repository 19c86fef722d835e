#pragma once
// Closed-loop replay of AgentX sessions (the AgentX mode of ../shared/specs/agentx-replay.md).
//
// N lanes each play one session tree at a time. On its first play a lane starts inside the
// session (start window) and warms up first: the turn before its start turn with its full prefix
// (the primer), then W one-token requests; profiling begins for every lane at once when all
// warmups have drained. From then on a lane follows its SessionPlan (think times, subagent
// streams, joins) and, when the whole tree has drained, starts the sampler's next session at turn
// 0. After `duration` no request starts; requests in flight drain for up to `drain_timeout`.
// When nothing is in flight and the next timer is more than the system idle gap cap away, every
// pending session timer moves earlier by the same amount.
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "bench/agentx_trace.h"
#include "bench/marker.h"
#include "bench/replay.h"
#include "bench/rng.h"
#include "bench/session_plan.h"
#include "bench/session_sampler.h"
#include "bench/transport.h"

namespace paceline::bench {

struct SessionReplayConfig {
  int concurrency = 1;
  SamplerKind sampler = SamplerKind::kSequential;
  uint64_t seed = 0;
  double start_window_lo = 0.25;  // fractions of the session's duration
  double start_window_hi = 0.75;
  int warmup_requests_per_lane = 10;                // one-token requests after the primer
  int64_t trace_idle_gap_cap_ns = 300'000'000'000;  // per session; <= 0: no cap
  int64_t system_idle_gap_cap_ns = 10'000'000'000;  // whole system; <= 0: no cap
  int64_t duration_ns = 600'000'000'000;            // profiling time
  int64_t drain_timeout_ns = 120'000'000'000;
};

class SessionReplayer final : public Replay {
 public:
  // `sessions` and `transport` must outlive the replayer, and the replayer must outlive every
  // callback it hands the transport.
  SessionReplayer(const std::vector<AgentxSession>& sessions, SessionReplayConfig config,
                  Transport& transport);

  void start(int64_t now_ns) override;
  std::optional<int64_t> next_timer_ns() const override;
  void advance_to(int64_t now_ns) override;
  bool finished() const override { return finished_; }
  void cancel(int64_t now_ns) override;
  const RecordLog& log() const override { return log_; }

  // When profiling began (driver clock); nullopt while lanes are still warming up.
  std::optional<int64_t> profiling_start_ns() const { return profiling_start_ns_; }
  int in_flight() const { return in_flight_; }
  // Time removed by the system idle gap cap, in total.
  int64_t idle_skipped_ns() const { return idle_skipped_ns_; }
  // Why the run stopped early (a failed warmup), if it did.
  const std::optional<std::string>& abort_reason() const { return abort_reason_; }
  bool cancelled() const { return cancelled_; }

 private:
  enum class TimerKind {
    kWarmupSend,
    kStartPlay,
    kStartStream,
    kSendTurn,
    kProfilingEnd,
    kDrainDeadline,
  };
  struct Timer {
    int64_t at_ns;
    uint64_t seq;
    TimerKind kind;
    int lane = -1;
    int play = 0;
    int stream = 0;
    int pos = 0;
    bool shiftable() const {
      return kind != TimerKind::kProfilingEnd && kind != TimerKind::kDrainDeadline;
    }
  };
  struct StreamRun {
    bool started = false;
    int sent = 0;        // turns sent so far
    int completed = 0;   // turns answered so far
    bool armed = false;  // the timer for turn `sent` is pending
    int children_done = 0;
    bool done = false;
  };
  struct Lane {
    int index = 0;
    SplitMix64 rng{0};
    int play = -1;  // plays started so far - 1
    const AgentxSession* session = nullptr;
    SessionPlan plan;
    std::string marker;
    std::vector<StreamRun> streams;
    std::unordered_set<int64_t> seen_blocks;  // ids sent in this play
    bool primer_pending = false;
    int warmup_one_token_left = 0;
  };
  struct Sent {
    int lane;
    int play;
    int stream;  // -1: warmup
    int pos;
  };

  void arm(int64_t at_ns, TimerKind kind, int lane = -1, int play = 0, int stream = 0, int pos = 0);
  void fire(const Timer& timer, int64_t now_ns);
  void begin_play(Lane& lane, size_t session_index, int start_turn);
  void send_warmup(Lane& lane, int64_t scheduled_ns, int64_t now_ns);
  void send_turn(Lane& lane, int stream, int pos, int64_t scheduled_ns, int64_t now_ns);
  // The request of turn `pos` of a stream, as send() will complete it.
  RequestSpec turn_spec(const Lane& lane, int stream, int pos) const;
  void fill_lane_fields(RequestSpec& spec, const Lane& lane) const;
  void send(RequestSpec spec, Lane& lane, Sent sent, int64_t scheduled_ns, int64_t now_ns);
  void on_finished(uint64_t id, int64_t now_ns, bool ok);
  void on_warmup_finished(Lane& lane, int64_t now_ns);
  void on_turn_finished(Lane& lane, int stream, int pos, int64_t now_ns);
  void start_stream(Lane& lane, int stream, int64_t now_ns);
  void maybe_arm_next_turn(Lane& lane, int stream, int64_t now_ns);
  void maybe_finish_stream(Lane& lane, int stream, int64_t now_ns);
  void begin_profiling(int64_t now_ns);
  void stop(int64_t now_ns);
  void end_run(int64_t now_ns);
  void compress_idle(int64_t now_ns);

  const std::vector<AgentxSession>& sessions_;
  SessionReplayConfig config_;
  Transport& transport_;
  SessionSampler sampler_;
  RecordLog log_;
  std::vector<Lane> lanes_;
  std::vector<Timer> timers_;
  std::vector<Sent> sent_;  // by request id
  uint64_t next_seq_ = 0;
  int in_flight_ = 0;
  int warm_lanes_ = 0;
  bool started_ = false;
  bool stopped_ = false;
  bool finished_ = false;
  bool cancelled_ = false;
  std::optional<int64_t> profiling_start_ns_;
  std::optional<std::string> abort_reason_;
  int64_t idle_skipped_ns_ = 0;
};

}  // namespace paceline::bench
