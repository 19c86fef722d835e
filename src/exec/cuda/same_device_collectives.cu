// The kernels of SameDeviceCollectives (same_device_collectives.h), its calls captured into CUDA
// graphs: ranks on one device meeting at barriers in device memory, each element summed (or
// copied) once, by its owning rank, into every rank's buffer.
#include <cuda/atomic>

#include "exec/cuda/same_device_exchange.h"

namespace paceline::cuda {
namespace {

using Exchange = SameDeviceExchange;
constexpr int kThreads = 256;

__device__ unsigned long long load_acquire(unsigned long long* p) {
  return ::cuda::atomic_ref<unsigned long long, ::cuda::thread_scope_device>(*p).load(
      ::cuda::memory_order_acquire);
}

__device__ void store_release(unsigned long long* p, unsigned long long v) {
  ::cuda::atomic_ref<unsigned long long, ::cuda::thread_scope_device>(*p).store(
      v, ::cuda::memory_order_release);
}

// Block b of rank `rank` reaches its next barrier and waits there for block b of every rank.
// Called by every thread of the block.
__device__ void barrier(Exchange* x, int rank, int ranks) {
  const int b = static_cast<int>(blockIdx.x);
  __syncthreads();  // the block's writes before this point come first
  if (threadIdx.x == 0) {
    const unsigned long long g = x->generation[rank][b] + 1;
    x->generation[rank][b] = g;
    __threadfence();
    store_release(&x->arrived[rank][b], g);
    for (int k = 0; k < ranks; ++k) {
      while (load_acquire(&x->arrived[k][b]) < g) __nanosleep(64);
    }
    __threadfence();
  }
  __syncthreads();
}

// This block's share of `count` elements, and within it the part rank `rank` owns.
struct Share {
  size_t begin = 0;
  size_t end = 0;
};

__device__ Share owned(size_t count, int rank, int ranks) {
  const size_t blocks = gridDim.x;
  const size_t per_block = (count + blocks - 1) / blocks;
  const size_t block_begin = min(count, blockIdx.x * per_block);
  const size_t block_end = min(count, block_begin + per_block);
  const size_t per_rank = (block_end - block_begin + ranks - 1) / ranks;
  Share s;
  s.begin = min(block_end, block_begin + static_cast<size_t>(rank) * per_rank);
  s.end = min(block_end, s.begin + per_rank);
  return s;
}

// Publishes this rank's input and output addresses and meets the others; the block's threads
// then find every rank's in src[] and dst[].
__device__ void publish(Exchange* x, int rank, int ranks, const float* send, float* recv,
                        const float** src, float** dst) {
  const int b = static_cast<int>(blockIdx.x);
  if (threadIdx.x == 0) {
    x->source[rank][b] = reinterpret_cast<unsigned long long>(send);
    x->target[rank][b] = reinterpret_cast<unsigned long long>(recv);
  }
  barrier(x, rank, ranks);
  if (threadIdx.x < static_cast<unsigned>(ranks)) {
    const int k = static_cast<int>(threadIdx.x);
    src[k] = reinterpret_cast<const float*>(load_acquire(&x->source[k][b]));
    dst[k] = reinterpret_cast<float*>(load_acquire(&x->target[k][b]));
  }
  __syncthreads();
}

// Each element this rank owns: the sum over the ranks in rank order, written to every rank.
__global__ void __launch_bounds__(kThreads)
    all_reduce_kernel(Exchange* x, int rank, int ranks, float* buffer, size_t count) {
  __shared__ const float* src[kSameDeviceMaxRanks];
  __shared__ float* dst[kSameDeviceMaxRanks];
  publish(x, rank, ranks, buffer, buffer, src, dst);
  const Share s = owned(count, rank, ranks);
  for (size_t i = s.begin + threadIdx.x; i < s.end; i += kThreads) {
    // Other ranks' values through L2 (__ldcg): this SM's L1 may hold older lines of them.
    float sum = __ldcg(src[0] + i);
    for (int k = 1; k < ranks; ++k) sum += __ldcg(src[k] + i);
    for (int k = 0; k < ranks; ++k) dst[k][i] = sum;
  }
  barrier(x, rank, ranks);  // nobody reads its buffer before every owner has written
}

// This rank's `count` values into slot `rank` of every rank's receive buffer.
__global__ void __launch_bounds__(kThreads)
    all_gather_kernel(Exchange* x, int rank, int ranks, const float* send, float* recv,
                      size_t count) {
  __shared__ const float* src[kSameDeviceMaxRanks];
  __shared__ float* dst[kSameDeviceMaxRanks];
  publish(x, rank, ranks, send, recv, src, dst);
  // Every block copies its share of the slot (the owner of a slot is its rank).
  const Share s = owned(count, 0, 1);
  for (int k = 0; k < ranks; ++k) {
    float* to = dst[k] + static_cast<size_t>(rank) * count;
    if (to == send) continue;  // in place: already there
    for (size_t i = s.begin + threadIdx.x; i < s.end; i += kThreads) to[i] = send[i];
  }
  barrier(x, rank, ranks);  // nobody reads a slot before its rank has written it everywhere
}

bool valid(const Exchange* x, int rank, int ranks) {
  return x != nullptr && ranks >= 1 && ranks <= kSameDeviceMaxRanks && rank >= 0 &&
         rank < ranks;
}

}  // namespace

cudaError_t load_same_device_collective_kernels() {
  cudaFuncAttributes a{};
  const cudaError_t e = cudaFuncGetAttributes(&a, all_reduce_kernel);
  return e != cudaSuccess ? e : cudaFuncGetAttributes(&a, all_gather_kernel);
}

cudaError_t launch_same_device_all_reduce_f32(Exchange* exchange, int rank, int ranks,
                                              float* buffer, size_t count, cudaStream_t stream) {
  if (!valid(exchange, rank, ranks)) return cudaErrorInvalidValue;
  all_reduce_kernel<<<kSameDeviceBlocks, kThreads, 0, stream>>>(exchange, rank, ranks,
                                                                            buffer, count);
  return cudaGetLastError();
}

cudaError_t launch_same_device_all_gather_f32(Exchange* exchange, int rank, int ranks,
                                              const float* send, float* recv, size_t count,
                                              cudaStream_t stream) {
  if (!valid(exchange, rank, ranks)) return cudaErrorInvalidValue;
  all_gather_kernel<<<kSameDeviceBlocks, kThreads, 0, stream>>>(exchange, rank,
                                                                            ranks, send, recv,
                                                                            count);
  return cudaGetLastError();
}

}  // namespace paceline::cuda
