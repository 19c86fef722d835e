#pragma once
// L2 prefetch of the small-M GEMM's weights (gemm_small_m.cu), PACELINE_GEMM_L2_PREFETCH=N, N
// from 0 to kSmallML2PrefetchMax k-blocks; 0, the default, is off. Plain C++ (shared by g++ and
// nvcc, and by the CPU-only tests).
//
// Before a block of the GEMM waits for the kernel ahead of it (programmatic launch), each of its
// threads asks the L2 for one weight row's next N k-blocks past the pipeline's first stages, by
// one bulk prefetch (cp.async.bulk.prefetch.L2), so that HBM streams the weights while the
// kernel ahead ends, not only the first stages. The arithmetic is untouched (the same bits).
#include <optional>
#include <string>

namespace paceline::cuda {

inline constexpr int kSmallML2PrefetchMax = 64;

// PACELINE_GEMM_L2_PREFETCH's value: unset or empty gives 0; anything but a whole number in
// [0, kSmallML2PrefetchMax] is an error naming the variable and the value.
inline std::optional<int> gemm_l2_prefetch_from(const char* value, std::string* error) {
  if (value == nullptr || *value == 0) return 0;
  int n = 0;
  for (const char* c = value; *c != 0; ++c) {
    if (*c < '0' || *c > '9' || n > kSmallML2PrefetchMax) {
      n = -1;
      break;
    }
    n = n * 10 + (*c - '0');
  }
  if (n < 0 || n > kSmallML2PrefetchMax) {
    *error = "PACELINE_GEMM_L2_PREFETCH=\"" + std::string(value) + "\": expected k-blocks 0 to " +
             std::to_string(kSmallML2PrefetchMax);
    return std::nullopt;
  }
  return n;
}

}  // namespace paceline::cuda
