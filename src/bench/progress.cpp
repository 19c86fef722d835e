#include "bench/progress.h"

#include <unistd.h>

#include <algorithm>

#include <fmt/format.h>

namespace paceline::bench {

ProgressCounts count_progress(const RecordLog& log) {
  ProgressCounts c;
  for (const RequestRecord& r : log.records()) {
    if (r.status == RecordStatus::kInFlight) {
      ++c.in_flight;
    } else if (r.phase == Phase::kWarmup) {
      ++c.warmup_done;
    } else if (r.status == RecordStatus::kOk) {
      ++c.completed;
    } else if (r.status == RecordStatus::kError) {
      ++c.failed;
    }
  }
  return c;
}

std::string format_progress(const ProgressSnapshot& s) {
  std::string line;
  if (!s.profiling) {
    line = fmt::format("[warmup] {:.1f} s | warmup done {}", s.elapsed_s, s.counts.warmup_done);
  } else if (s.duration_s > 0) {
    line = fmt::format("[profiling] {:.1f} / {:.0f} s", s.elapsed_s, s.duration_s);
  } else {
    line = fmt::format("[profiling] {:.1f} s", s.elapsed_s);
  }
  line += fmt::format(" | done {} | failed {} | in flight {} | {:.1f} tok/s", s.counts.completed,
                      s.counts.failed, s.counts.in_flight, s.tok_s);
  if (s.profiling && s.duration_s > 0) {
    double left = std::max(0.0, s.duration_s - s.elapsed_s);
    line += left > 0 ? fmt::format(" | {:.0f} s left", left) : std::string(" | draining");
  }
  return line;
}

ProgressLine::ProgressLine(std::FILE* out, double line_interval_s)
    : out_(out),
      terminal_(isatty(fileno(out)) == 1),
      line_interval_s_(line_interval_s),
      enabled_(terminal_ || line_interval_s > 0) {}

ProgressLine::~ProgressLine() {
  end();
}

void ProgressLine::update(const ProgressSnapshot& snapshot) {
  if (!enabled_) return;
  std::string line = format_progress(snapshot);
  if (!terminal_) {
    std::fprintf(out_, "progress: %s\n", line.c_str());
    std::fflush(out_);
    return;
  }
  size_t width = line.size();
  if (width < last_width_) line.append(last_width_ - width, ' ');  // erase a longer old line
  last_width_ = width;
  std::fprintf(out_, "\r%s", line.c_str());
  std::fflush(out_);
}

void ProgressLine::end() {
  if (!terminal_ || last_width_ == 0) return;
  std::fputc('\n', out_);
  std::fflush(out_);
  last_width_ = 0;
}

}  // namespace paceline::bench
