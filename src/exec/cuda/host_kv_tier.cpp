#include "exec/cuda/host_kv_tier.h"

#include <spdlog/spdlog.h>

#include "base/error.h"
#include "exec/cuda/cuda_check.h"

namespace paceline::cuda {

HostKvTier::HostKvTier(int64_t num_blocks, const KvBlockLayout& gpu)
    : gpu_(gpu), num_blocks_(num_blocks) {
  if (num_blocks < 1) fail("host KV tier: {} blocks", num_blocks);
  const size_t bytes = static_cast<size_t>(num_blocks) * gpu.block_bytes();
  // Pinned (page-locked) so the copies run at the link's rate and asynchronously; the memory
  // is only ever touched by the GPU's copy engines, never by the host.
  const cudaError_t e = cudaHostAlloc(reinterpret_cast<void**>(&host_), bytes,
                                      cudaHostAllocPortable);
  if (e != cudaSuccess) {
    host_ = nullptr;
    cudaGetLastError();  // not sticky: clear it so the executor can report and go on
    fail("--kv-offloading-size: pinning {:.2f} GiB of host memory for {} KV blocks failed ({})",
         static_cast<double>(bytes) / (1 << 30), num_blocks, cudaGetErrorString(e));
  }
}

HostKvTier::~HostKvTier() {
  if (host_ != nullptr) cudaFreeHost(host_);
}

void HostKvTier::check(int32_t gpu_block, int32_t host_block) const {
  if (gpu_block < 0 || gpu_block >= gpu_.num_blocks || host_block < 0 ||
      host_block >= num_blocks_) {
    fail("KV block copy between GPU block {} and host block {} is outside the pools ({} and {} "
         "blocks)", gpu_block, host_block, gpu_.num_blocks, num_blocks_);
  }
}

char* HostKvTier::host_block_ptr(int32_t host_block) const {
  return host_ + static_cast<size_t>(host_block) * gpu_.block_bytes();
}

void HostKvTier::store(int32_t gpu_block, int32_t host_block, cudaStream_t stream) {
  check(gpu_block, host_block);
  const char* src = gpu_.base + static_cast<size_t>(gpu_block) * gpu_.chunk_bytes;
  PACELINE_CUDA_CHECK(cudaMemcpy2DAsync(host_block_ptr(host_block), gpu_.chunk_bytes, src,
                                        gpu_.plane_pitch, gpu_.chunk_bytes,
                                        static_cast<size_t>(gpu_.planes),
                                        cudaMemcpyDeviceToHost, stream));
}

cudaError_t HostKvTier::load(int32_t host_block, int32_t gpu_block, cudaStream_t stream,
                             bool inject_fault) {
  check(gpu_block, host_block);
  char* dst = gpu_.base + static_cast<size_t>(gpu_block) * gpu_.chunk_bytes;
  const size_t src_pitch = inject_fault ? gpu_.chunk_bytes - 1 : gpu_.chunk_bytes;
  const cudaError_t e = cudaMemcpy2DAsync(
      dst, gpu_.plane_pitch, host_block_ptr(host_block), src_pitch, gpu_.chunk_bytes,
      static_cast<size_t>(gpu_.planes), cudaMemcpyHostToDevice, stream);
  if (e != cudaSuccess) cudaGetLastError();  // not sticky: the next call must not see it
  return e;
}

std::vector<BlockCopy> enqueue_kv_transfers(HostKvTier* tier, KvLoadFaults* faults,
                                            const KvTransfers& t, cudaStream_t stream) {
  std::vector<BlockCopy> failed;
  if (t.empty()) return failed;
  if (tier == nullptr) fail("step plans copies to a host KV tier this executor does not have");
  for (const BlockCopy& c : t.stores) tier->store(c.gpu_block, c.host_block, stream);
  for (const BlockCopy& c : t.loads) {
    const bool inject = faults != nullptr && faults->next_load_fails();
    const cudaError_t e = tier->load(c.host_block, c.gpu_block, stream, inject);
    if (e == cudaSuccess) continue;
    spdlog::warn("cuda: loading host KV block {} into block {} failed: {}", c.host_block,
                 c.gpu_block, cudaGetErrorString(e));
    failed.push_back(c);
  }
  return failed;
}

}  // namespace paceline::cuda
