#pragma once
// What every fuzz target uses to report a broken property: a trap, which libFuzzer records as a
// crash together with the input, instead of an exception that a target might swallow.
#include <cstdio>

namespace paceline::fuzz {

// `what` is printed first, so the crash log says which property failed.
inline void require(bool condition, const char* what) {
  if (condition) return;
  std::fprintf(stderr, "fuzz: property failed: %s\n", what);
  __builtin_trap();
}

}  // namespace paceline::fuzz
