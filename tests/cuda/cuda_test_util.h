#pragma once
// Shared by the tests/cuda tests: skipping without a GPU, fixture loading, and the relative
// error the issue states its tolerance in.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#if PACELINE_HAVE_CUDA
#include "exec/cuda/cuda_executor.h"
#endif

namespace paceline::testing {

// Skips the test, saying why, unless this build has CUDA and a device is present. CI builds the
// CUDA code but has no GPU: every GPU test reports SKIPPED there, never a vacuous pass.
#define PACELINE_REQUIRE_GPU()                                              \
  do {                                                                      \
    if (!::paceline::testing::gpu_present()) GTEST_SKIP() << ::paceline::testing::gpu_absence(); \
  } while (0)

inline bool gpu_present() {
#if PACELINE_HAVE_CUDA
  return cuda_device_available();
#else
  return false;
#endif
}

inline std::string gpu_absence() {
#if PACELINE_HAVE_CUDA
  return "no GPU: " + cuda_device_description();
#else
  return "this build has no CUDA (nvcc not found at configure time)";
#endif
}

// ||a - b|| / ||b|| over one row of logits.
inline double relative_error(const float* a, const float* b, int64_t n) {
  double diff = 0.0, norm = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    diff += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
    norm += static_cast<double>(b[i]) * b[i];
  }
  return norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
}

// The worst relative_error over rows of [rows][vocab] arrays.
inline double worst_relative_error(const std::vector<float>& a, const std::vector<float>& b,
                                   int64_t vocab) {
  if (a.size() != b.size()) return INFINITY;
  double worst = 0.0;
  for (size_t r = 0; r * static_cast<size_t>(vocab) < a.size(); ++r) {
    worst = std::max(worst, relative_error(a.data() + r * vocab, b.data() + r * vocab, vocab));
  }
  return worst;
}

constexpr double kBf16Tolerance = 1e-2;

// The source tree (fixtures): $PACELINE_SOURCE_DIR when set, for binaries run on another machine
// than the one that built them, else the folder compiled in.
inline std::string source_dir() {
  const char* env = std::getenv("PACELINE_SOURCE_DIR");
  return env != nullptr && *env != '\0' ? env : PACELINE_SOURCE_DIR;
}

}  // namespace paceline::testing
