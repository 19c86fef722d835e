#include "base/clock.h"

#include <gtest/gtest.h>

#include "base/error.h"

namespace paceline {
namespace {

TEST(VirtualClock, AdvancesOnlyWhenTold) {
  VirtualClock clock(100);
  EXPECT_EQ(clock.now_ns(), 100);
  clock.advance_ns(50);
  EXPECT_EQ(clock.now_ns(), 150);
  clock.set_ns(7);
  EXPECT_EQ(clock.now_ns(), 7);
}

TEST(SteadyClock, IsMonotonic) {
  SteadyClock clock;
  int64_t a = clock.now_ns();
  int64_t b = clock.now_ns();
  EXPECT_LE(a, b);
}

TEST(Error, FormatsItsMessage) {
  try {
    fail("tensor {} in {}: bad shape", "w", "model.safetensors");
    FAIL() << "fail() returned";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "tensor w in model.safetensors: bad shape");
  }
}

}  // namespace
}  // namespace paceline
