#pragma once
// Which kernels PACELINE_PDL_CHAIN launches programmatically (programmatic_launch.cuh). Plain
// C++ (shared by g++ and nvcc).
#include <cstddef>
#include <cstring>

namespace paceline::cuda {

// The kernels between the GEMMs of a step that PACELINE_PDL_CHAIN can name.
enum class ChainedKernel { kNorm, kQk, kDecode, kMerge, kSwiglu, kArgmax };

// The kernels chained when PACELINE_PDL_CHAIN is unset: the ones that never made a step slower on
// the H200 (docs/performance.md, sessions 19 and 20). The decode attention is left out: chained
// with the rest it made decode batch 64 at 1k and every 32k step slower.
inline constexpr const char* kDefaultChain = "norm,qk,merge,swiglu,argmax";

// Whether PACELINE_PDL_CHAIN's value names `kernel`: a comma-separated list of norm, qk, decode,
// merge, swiglu and argmax, or "1" for all of them, or "0" (or empty) for none; nullptr (unset)
// names kDefaultChain's, and names it does not know are ignored.
inline bool chain_names(const char* value, ChainedKernel kernel) {
  if (value == nullptr) value = kDefaultChain;
  if (std::strcmp(value, "1") == 0) return true;
  static constexpr const char* kNames[] = {"norm", "qk", "decode", "merge", "swiglu", "argmax"};
  const char* name = kNames[static_cast<int>(kernel)];
  const size_t len = std::strlen(name);
  for (const char* p = value;;) {
    const char* end = std::strchr(p, ',');
    const size_t n = end != nullptr ? static_cast<size_t>(end - p) : std::strlen(p);
    if (n == len && std::strncmp(p, name, len) == 0) return true;
    if (end == nullptr) return false;
    p = end + 1;
  }
}

}  // namespace paceline::cuda
