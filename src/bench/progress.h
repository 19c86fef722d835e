#pragma once
// The live progress of a run, on a terminal one line rewritten in place once a second:
//   [warmup] 3.0 s | done 0 | failed 0 | in flight 8 | 0.0 tok/s
//   [profiling] 42.0 / 600 s | done 118 | failed 0 | in flight 48 | 2310.5 tok/s | 558 s left
// Counts are profiling requests; tok/s is content chunks per second over the last interval.
// When the stream is not a terminal (output redirected, CI logs), the same line is written as a
// line of its own at a longer interval (10 s by default), so a long run still shows it is alive
// without filling the log.
#include <cstdint>
#include <cstdio>
#include <string>

#include "bench/record.h"

namespace paceline::bench {

struct ProgressCounts {
  int64_t completed = 0;  // profiling, ok
  int64_t failed = 0;     // profiling, error
  int64_t warmup_done = 0;
  int64_t in_flight = 0;  // any phase
};

ProgressCounts count_progress(const RecordLog& log);

struct ProgressSnapshot {
  bool profiling = false;
  double elapsed_s = 0;   // since profiling began, or since the run began while warming up
  double duration_s = 0;  // the profiling duration; 0 when unbounded
  ProgressCounts counts;
  double tok_s = 0;
};

std::string format_progress(const ProgressSnapshot& snapshot);

class ProgressLine {
 public:
  // `line_interval_s`: seconds between lines when `out` is not a terminal; <= 0: none.
  explicit ProgressLine(std::FILE* out = stderr, double line_interval_s = 10);
  ~ProgressLine();  // ends the line

  bool enabled() const { return enabled_; }
  bool on_terminal() const { return terminal_; }
  // How often update() should be called: every second on a terminal, else the line interval.
  double interval_s() const { return terminal_ ? 1.0 : line_interval_s_; }
  void update(const ProgressSnapshot& snapshot);
  // Leaves the last line on screen and moves to the next one.
  void end();

 private:
  std::FILE* out_;
  bool terminal_;
  double line_interval_s_;
  bool enabled_;
  size_t last_width_ = 0;
};

}  // namespace paceline::bench
