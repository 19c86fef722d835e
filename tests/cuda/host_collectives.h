#pragma once
// Tensor-parallel ranks' collectives on one GPU, for tests (NCCL refuses two ranks on one device):
// each call waits for its rank's stream, meets the other ranks, and reads their buffers; sums are
// taken on the host in rank order, so every rank holds the same bits, as with NCCL. Eager steps
// only: nothing here can be captured in a graph.
#include <barrier>
#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

#include <cuda_runtime.h>

#include "exec/cuda/cuda_check.h"
#include "exec/cuda/rank_collectives.h"

namespace paceline::testing {

class HostCollectives {
 public:
  explicit HostCollectives(int ranks)
      : ranks_(ranks), meet_(ranks), buffers_(static_cast<size_t>(ranks)) {}

  class Rank final : public cuda::RankCollectives {
   public:
    Rank(HostCollectives& all, int rank) : all_(all), rank_(rank) {}
    int rank() const override { return rank_; }
    int ranks() const override { return all_.ranks_; }
    void all_reduce_sum_f32(float* buffer, size_t count, cudaStream_t stream) override {
      all_.reduce(rank_, buffer, count, stream);
    }
    void all_gather_f32(const float* send, float* recv, size_t count,
                        cudaStream_t stream) override {
      all_.gather(rank_, send, recv, count, stream);
    }

   private:
    HostCollectives& all_;
    int rank_;
  };

 private:
  void reduce(int rank, float* buffer, size_t count, cudaStream_t stream) {
    PACELINE_CUDA_CHECK(cudaStreamSynchronize(stream));
    buffers_[static_cast<size_t>(rank)] = buffer;
    meet_.arrive_and_wait();  // every rank's partial is in place
    std::vector<float> sum(count), part(count);
    for (int r = 0; r < ranks_; ++r) {
      PACELINE_CUDA_CHECK(cudaMemcpy(r == 0 ? sum.data() : part.data(),
                                     buffers_[static_cast<size_t>(r)], count * sizeof(float),
                                     cudaMemcpyDeviceToHost));
      if (r > 0) {
        for (size_t i = 0; i < count; ++i) sum[i] += part[i];
      }
    }
    meet_.arrive_and_wait();  // every rank has read every partial
    PACELINE_CUDA_CHECK(
        cudaMemcpy(buffer, sum.data(), count * sizeof(float), cudaMemcpyHostToDevice));
  }

  void gather(int rank, const float* send, float* recv, size_t count, cudaStream_t stream) {
    PACELINE_CUDA_CHECK(cudaStreamSynchronize(stream));
    buffers_[static_cast<size_t>(rank)] = const_cast<float*>(send);
    meet_.arrive_and_wait();
    for (int r = 0; r < ranks_; ++r) {
      float* dst = recv + static_cast<size_t>(r) * count;
      if (dst == buffers_[static_cast<size_t>(r)]) continue;  // in place: already there
      PACELINE_CUDA_CHECK(cudaMemcpy(dst, buffers_[static_cast<size_t>(r)], count * sizeof(float),
                                     cudaMemcpyDeviceToDevice));
    }
    meet_.arrive_and_wait();  // nobody overwrites a slice another rank still reads
  }

  int ranks_;
  std::barrier<> meet_;
  std::vector<float*> buffers_;
};

// Collectives for a CudaExecutor of `ranks` ranks on one device (CudaExecutorOptions::
// rank_collectives): the returned function owns them, so they live as long as the options.
inline std::function<cuda::RankCollectives*(int)> host_rank_collectives(int ranks) {
  struct Joined {
    explicit Joined(int n) : all(n) {
      for (int r = 0; r < n; ++r) each.push_back(std::make_unique<HostCollectives::Rank>(all, r));
    }
    HostCollectives all;
    std::vector<std::unique_ptr<HostCollectives::Rank>> each;
  };
  auto joined = std::make_shared<Joined>(ranks);
  return [joined](int r) -> cuda::RankCollectives* {
    return joined->each[static_cast<size_t>(r)].get();
  };
}

}  // namespace paceline::testing
