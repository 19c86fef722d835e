#pragma once
// Collectives of tensor-parallel ranks that share one GPU (docs/tensor-parallel.md, "The ranks'
// CUDA graphs"): what the GPU tests and checks join their ranks with, since NCCL refuses two ranks
// on one device. They are for checking the split, not for speed: a TP replica on one GPU computes
// nothing faster. Every rank holds the same bits after a call, the sum taken in rank order, as
// with NCCL.
//
// A call made eagerly meets the other ranks on the host: the rank's stream is synchronized, the
// ranks meet at a barrier, each reads every rank's buffer and sums in rank order on the host (an
// all-gather copies each slice into place), and they meet again before anyone writes. No kernel
// ever waits for another rank there, so an allocation or a lazy kernel load on another rank's
// thread (which may wait for the device to go idle) cannot deadlock it.
//
// A call made while the stream is being captured into a CUDA graph is a kernel instead, so a
// rank's graph captures its collectives like any other launch. Block b of every rank publishes its
// buffer's address and meets the other ranks' block b at a barrier in device memory; each element
// of the block's share has one owning rank, which sums it over the ranks in rank order and writes
// the sum into every rank's buffer (an all-gather: copies its slice into every rank's receive
// buffer); a second barrier holds every rank until all owners have written, so no scratch memory
// is needed. The barriers count generations in device memory (each rank's own counter, raised by
// its kernels), so any number of replays keep meeting in order. The kernels spin while they wait:
// every rank must launch its graph before its thread does anything that may wait for the device
// (CudaExecutor launches every rank's graph, then waits for the launches), and they are loaded at
// construction, not lazily at a first launch. The ranks must issue the same collectives in the
// same order, as tensor-parallel ranks do.
#include <cuda_runtime.h>

#include <barrier>
#include <cstddef>
#include <memory>
#include <vector>

#include "exec/cuda/device_buffer.h"
#include "exec/cuda/rank_collectives.h"
#include "exec/cuda/same_device_exchange.h"

namespace paceline::cuda {

class SameDeviceCollectives {
 public:
  static constexpr int kMaxRanks = kSameDeviceMaxRanks;

  // `ranks` ranks (1..kMaxRanks) on the current device.
  explicit SameDeviceCollectives(int ranks);
  ~SameDeviceCollectives();
  SameDeviceCollectives(const SameDeviceCollectives&) = delete;
  SameDeviceCollectives& operator=(const SameDeviceCollectives&) = delete;

  int ranks() const { return ranks_; }
  // Rank r's side (r < ranks()); lives as long as this object.
  RankCollectives* rank(int r);

 private:
  class Rank;
  SameDeviceExchange* exchange() const { return exchange_.as<SameDeviceExchange>(); }
  // The eager calls' meeting on the host.
  void host_all_reduce(int rank, float* buffer, size_t count, cudaStream_t stream);
  void host_all_gather(int rank, const float* send, float* recv, size_t count,
                       cudaStream_t stream);

  int ranks_;
  DeviceBuffer exchange_;  // one SameDeviceExchange, zeroed
  std::barrier<> meet_;    // the eager calls'
  std::vector<const float*> published_;  // each rank's buffer in the current eager call
  std::vector<std::unique_ptr<Rank>> each_;
};

}  // namespace paceline::cuda
