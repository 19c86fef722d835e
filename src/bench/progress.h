#pragma once
// The live progress line of a run on a terminal, rewritten in place once a second:
//   [warmup] 3.0 s | done 0 | failed 0 | in flight 8 | 0.0 tok/s
//   [profiling] 42.0 / 600 s | done 118 | failed 0 | in flight 48 | 2310.5 tok/s | 558 s left
// Counts are profiling requests; tok/s is content chunks per second over the last interval.
// Nothing is written when the stream is not a terminal (logs and CI stay clean).
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
  explicit ProgressLine(std::FILE* out = stderr);
  ~ProgressLine();  // ends the line

  bool enabled() const { return enabled_; }
  void update(const ProgressSnapshot& snapshot);
  // Leaves the last line on screen and moves to the next one.
  void end();

 private:
  std::FILE* out_;
  bool enabled_;
  size_t last_width_ = 0;
};

}  // namespace paceline::bench
