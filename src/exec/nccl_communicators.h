#pragma once
// The communicators of one process's tensor-parallel ranks (docs/tensor-parallel.md, "The CUDA
// ranks": one process, one thread per GPU): one communicator a device from ncclCommInitAll,
// NVLink multicast off before the first, and the two collectives the split needs. Each rank's
// thread calls its own rank's collective on its own stream, so a CUDA graph of that rank's
// forward captures it. Errors name the call and NCCL's words for the failure. Plain C++ (no CUDA
// headers), like the library it calls.
#include <cstddef>
#include <vector>

#include "exec/nccl_library.h"

namespace paceline::nccl {

// Throws paceline::Error "CALL failed: NCCL's words (NCCL error N)" unless result is kSuccess.
void check(const Library& lib, Result result, const char* call);

class Communicators {
 public:
  // Rank i on devices[i]; at least one device, none twice. `lib` must outlive this.
  Communicators(const Library& lib, std::vector<int> devices);
  ~Communicators();
  Communicators(const Communicators&) = delete;
  Communicators& operator=(const Communicators&) = delete;

  int ranks() const { return static_cast<int>(comms_.size()); }
  const std::vector<int>& devices() const { return devices_; }

  // In place on rank `rank`: the `count` floats at `buffer` become their sum over the ranks
  // (NCCL's result is one value given to every rank, so every rank holds the same bits).
  void all_reduce_sum_f32(int rank, float* buffer, size_t count, Stream stream) const;
  // Rank `rank`'s `count` floats at `send` go to [rank * count, (rank + 1) * count) of every
  // rank's `recv` (ranks() * count floats): the slices side by side, rank-major.
  void all_gather_f32(int rank, const float* send, float* recv, size_t count, Stream stream) const;

 private:
  Comm comm(int rank) const;

  const Library& lib_;
  std::vector<int> devices_;
  std::vector<Comm> comms_;
};

}  // namespace paceline::nccl
