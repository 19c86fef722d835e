// The progress line off a terminal: a whole line per update (which the caller makes every
// --progress-interval seconds), and nothing when the interval is 0.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "bench/progress.h"

namespace paceline::bench {
namespace {

std::string contents(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string out;
  for (int c; (c = std::fgetc(f)) != EOF;) out += static_cast<char>(c);
  return out;
}

ProgressSnapshot snapshot(double elapsed_s) {
  ProgressSnapshot s;
  s.profiling = true;
  s.elapsed_s = elapsed_s;
  s.duration_s = 60;
  s.counts.completed = 12;
  s.counts.in_flight = 4;
  s.tok_s = 250;
  return s;
}

TEST(ProgressLine, OffATerminalEachUpdateIsALineOfItsOwn) {
  std::FILE* f = std::tmpfile();  // a file, as when stderr is redirected
  {
    ProgressLine line(f, 10);
    EXPECT_TRUE(line.enabled());
    EXPECT_FALSE(line.on_terminal());
    EXPECT_EQ(line.interval_s(), 10);
    line.update(snapshot(10));
    line.update(snapshot(20));
  }
  EXPECT_EQ(contents(f),
            "progress: [profiling] 10.0 / 60 s | done 12 | failed 0 | in flight 4 | 250.0 tok/s "
            "| 50 s left\n"
            "progress: [profiling] 20.0 / 60 s | done 12 | failed 0 | in flight 4 | 250.0 tok/s "
            "| 40 s left\n");
  std::fclose(f);
}

TEST(ProgressLine, IntervalZeroWritesNothingOffATerminal) {
  std::FILE* f = std::tmpfile();
  {
    ProgressLine line(f, 0);
    EXPECT_FALSE(line.enabled());
    line.update(snapshot(1));
  }
  EXPECT_EQ(contents(f), "");
  std::fclose(f);
}

}  // namespace
}  // namespace paceline::bench
