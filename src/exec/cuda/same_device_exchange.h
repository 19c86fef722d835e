#pragma once
// The device side of SameDeviceCollectives (same_device_collectives.h, which explains them): the
// memory the ranks' collective kernels meet in, and the kernels' launches
// (same_device_collectives.cu).
#include <cuda_runtime.h>

#include <cstddef>

namespace paceline::cuda {

inline constexpr int kSameDeviceMaxRanks = 8;
inline constexpr int kSameDeviceBlocks = 16;  // blocks of one collective kernel

// Zeroed before first use. Every field is block b of rank r's, [r][b]; addresses are stored as
// integers so that one atomic type serves all.
struct SameDeviceExchange {
  unsigned long long generation[kSameDeviceMaxRanks][kSameDeviceBlocks];  // barriers it passed
  unsigned long long arrived[kSameDeviceMaxRanks][kSameDeviceBlocks];     // the one it reached
  unsigned long long source[kSameDeviceMaxRanks][kSameDeviceBlocks];  // its input (const float*)
  unsigned long long target[kSameDeviceMaxRanks][kSameDeviceBlocks];  // its output (float*)
};

// Loads the kernels (lazy loading would load them at a first launch, which may wait for the
// device while another rank's kernel spins): once, before any launch.
cudaError_t load_same_device_collective_kernels();
// Rank `rank` of `ranks` meeting in `exchange`, on `stream`.
cudaError_t launch_same_device_all_reduce_f32(SameDeviceExchange* exchange, int rank, int ranks,
                                              float* buffer, size_t count, cudaStream_t stream);
cudaError_t launch_same_device_all_gather_f32(SameDeviceExchange* exchange, int rank, int ranks,
                                              const float* send, float* recv, size_t count,
                                              cudaStream_t stream);

}  // namespace paceline::cuda
