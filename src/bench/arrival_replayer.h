#pragma once
// Open-loop replay of a Mooncake trace: each record is sent at its timestamp (times
// --time-scale), whatever the server is doing, so the offered load is the trace's. Records that
// share a `session_id` (AIPerf's extension) form a chain instead: a later turn waits for the one
// before it and then its `delay` (or, without a delay, until its own timestamp). Every record is
// profiled; schedule lag (actual send - scheduled send) is in each record.
#include <cstdint>
#include <optional>
#include <queue>
#include <string>
#include <vector>

#include "bench/mooncake_trace.h"
#include "bench/replay.h"
#include "bench/transport.h"

namespace paceline::bench {

struct ArrivalReplayConfig {
  double time_scale = 1.0;  // multiplies timestamps and delays: 0.5 replays twice as fast
  int64_t block_size = kMooncakeBlockSize;
  std::string trace_name = "mooncake";  // the scope its hash ids compare in
  uint64_t seed = 0;                    // picks the run's cache-bust marker
  int64_t duration_ns = 0;              // 0: until the last record has been answered
  int64_t drain_timeout_ns = 120'000'000'000;
};

class ArrivalReplayer final : public Replay {
 public:
  // `records` and `transport` must outlive the replayer.
  ArrivalReplayer(const std::vector<MooncakeRecord>& records, ArrivalReplayConfig config,
                  Transport& transport);

  void start(int64_t now_ns) override;
  std::optional<int64_t> next_timer_ns() const override;
  void advance_to(int64_t now_ns) override;
  bool finished() const override { return finished_; }
  void cancel(int64_t now_ns) override;
  const RecordLog& log() const override { return log_; }

  int in_flight() const { return in_flight_; }

 private:
  struct Timer {
    int64_t at_ns;
    uint64_t seq;
    int64_t record;  // -1: end of duration, -2: drain deadline
    bool operator>(const Timer& o) const {
      return at_ns != o.at_ns ? at_ns > o.at_ns : seq > o.seq;
    }
  };

  int64_t scaled_ns(double ms) const;
  void arm(int64_t at_ns, int64_t record);
  void send(int64_t index, int64_t scheduled_ns, int64_t now_ns);
  void on_finished(uint64_t id, int64_t now_ns);
  void stop(int64_t now_ns);
  void end_run(int64_t now_ns);
  void check_done();

  const std::vector<MooncakeRecord>& records_;
  ArrivalReplayConfig config_;
  Transport& transport_;
  RecordLog log_;
  std::string marker_;
  std::vector<int64_t> next_in_session_;  // the record that waits for this one, or -1
  std::vector<int64_t> record_of_request_;
  std::priority_queue<Timer, std::vector<Timer>, std::greater<>> timers_;
  uint64_t next_seq_ = 0;
  int64_t run_start_ns_ = 0;
  int64_t unsent_ = 0;
  int in_flight_ = 0;
  bool started_ = false;
  bool stopped_ = false;
  bool finished_ = false;
};

}  // namespace paceline::bench
