#pragma once
// One tensor-parallel rank's side of the two collectives its forward needs
// (docs/tensor-parallel.md, "The CUDA ranks"): the residual's all-reduce after o_proj and
// down_proj, and the all-gather of the lm_head's vocabulary slices. CudaModel calls them on its
// own stream; NcclRankCollectives is NCCL's (one communicator a rank); the GPU tests also run
// several ranks on one device through an implementation of their own.
#include <cuda_runtime.h>

#include <cstddef>

#include "exec/nccl_communicators.h"

namespace paceline::cuda {

class RankCollectives {
 public:
  virtual ~RankCollectives() = default;
  virtual int rank() const = 0;
  virtual int ranks() const = 0;
  // In place: the `count` floats at `buffer` become their sum over the ranks, the same bits on
  // every rank.
  virtual void all_reduce_sum_f32(float* buffer, size_t count, cudaStream_t stream) = 0;
  // This rank's `count` floats at `send` go to [rank * count, (rank + 1) * count) of every
  // rank's `recv`; `send` may be recv + rank * count (in place).
  virtual void all_gather_f32(const float* send, float* recv, size_t count,
                              cudaStream_t stream) = 0;
};

// Rank `rank` of NCCL communicators (which must outlive it).
class NcclRankCollectives final : public RankCollectives {
 public:
  NcclRankCollectives(const nccl::Communicators& comms, int rank) : comms_(comms), rank_(rank) {}
  int rank() const override { return rank_; }
  int ranks() const override { return comms_.ranks(); }
  void all_reduce_sum_f32(float* buffer, size_t count, cudaStream_t stream) override {
    comms_.all_reduce_sum_f32(rank_, buffer, count, stream);
  }
  void all_gather_f32(const float* send, float* recv, size_t count,
                      cudaStream_t stream) override {
    comms_.all_gather_f32(rank_, send, recv, count, stream);
  }

 private:
  const nccl::Communicators& comms_;
  int rank_;
};

}  // namespace paceline::cuda
