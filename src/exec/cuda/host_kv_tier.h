#pragma once
// The host-memory KV tier of the CUDA executor (--kv-offloading-size): pinned host blocks that
// the plans' kv_transfers copy GPU blocks to (stores, blocks giving way) and back (loads,
// prefixes returning). A GPU block is 2 x layers planes of block_size slots, one plane per
// layer's K and V, spread over the whole cache; a host block keeps those planes contiguous, so
// each copy is one strided 2D copy. Copies are enqueued on the step's stream before the
// forward: a load must land before attention reads it, and a store must read its block before
// this step's new KV overwrites it (the scheduler hands evicted blocks straight to new tokens),
// so a separate copy stream could not overlap them with the step that needs them anyway.
#include <cstddef>
#include <cstdint>
#include <vector>

#include <cuda_runtime.h>

#include "exec/kv_load_faults.h"
#include "kv/kv_manager.h"

namespace paceline::cuda {

// Where a GPU KV block's planes are: plane p of block b starts at
// base + p * plane_pitch + b * chunk_bytes and is chunk_bytes long.
struct KvBlockLayout {
  char* base = nullptr;
  size_t plane_pitch = 0;
  size_t chunk_bytes = 0;
  int64_t planes = 0;
  int64_t num_blocks = 0;
  size_t block_bytes() const { return chunk_bytes * static_cast<size_t>(planes); }
};

class HostKvTier {
 public:
  // Pins num_blocks host blocks; throws paceline::Error naming the size when the host cannot.
  HostKvTier(int64_t num_blocks, const KvBlockLayout& gpu);
  ~HostKvTier();
  HostKvTier(const HostKvTier&) = delete;
  HostKvTier& operator=(const HostKvTier&) = delete;

  int64_t num_blocks() const { return num_blocks_; }
  // Enqueue one block's copy on `stream`; throw paceline::Error on a block outside either pool.
  void store(int32_t gpu_block, int32_t host_block, cudaStream_t stream);
  // A load's error is returned (and cleared), not thrown: a block that does not arrive is
  // recomputed (StepResult::failed_loads). `inject_fault` (the PACELINE_FAILPOINT_KV_LOAD
  // failpoint) makes the runtime refuse this copy: it is issued with a pitch narrower than a row.
  [[nodiscard]] cudaError_t load(int32_t host_block, int32_t gpu_block, cudaStream_t stream,
                                 bool inject_fault = false);

 private:
  void check(int32_t gpu_block, int32_t host_block) const;
  char* host_block_ptr(int32_t host_block) const;

  KvBlockLayout gpu_;
  int64_t num_blocks_ = 0;
  char* host_ = nullptr;
};

// A step plan's copies on `stream`, ahead of the forward enqueued after them: stores first (they
// read blocks the forward may overwrite), then loads (the forward reads them). Returns the loads
// the runtime refused (the forward must then not run: StepResult::failed_loads); `faults` (may be
// null) is the failpoint's count. Throws paceline::Error for copies without a tier or outside
// its pools. A tensor-parallel rank runs it on its own tier (its KV heads) and stream.
std::vector<BlockCopy> enqueue_kv_transfers(HostKvTier* tier, KvLoadFaults* faults,
                                            const KvTransfers& t, cudaStream_t stream);

}  // namespace paceline::cuda
