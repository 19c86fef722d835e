#include "exec/nccl_communicators.h"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "base/error.h"

namespace paceline::nccl {

void check(const Library& lib, Result result, const char* call) {
  if (result == Result::kSuccess) return;
  fail("{} failed: {} (NCCL error {})", call, lib.error_string(result), static_cast<int>(result));
}

Communicators::Communicators(const Library& lib, std::vector<int> devices)
    : lib_(lib), devices_(std::move(devices)) {
  if (devices_.empty()) fail("NCCL communicators: no device given");
  std::vector<int> sorted = devices_;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
    fail("NCCL communicators: a device is listed twice (one rank a GPU)");
  }
  if (const auto replaced = keep_nvls_off()) {
    spdlog::warn(
        "NCCL_NVLS_ENABLE was {}; set to 0 (NVLink multicast stays off: the GPUs are "
        "shared)",
        *replaced);
  }
  comms_.assign(devices_.size(), nullptr);
  check(lib_, lib_.comm_init_all(comms_.data(), ranks(), devices_.data()), "ncclCommInitAll");
}

Communicators::~Communicators() {
  for (Comm c : comms_) {
    if (c != nullptr) lib_.comm_destroy(c);  // nothing to do about a failure here
  }
}

Comm Communicators::comm(int rank) const {
  if (rank < 0 || rank >= ranks()) {
    fail("NCCL communicators: rank {} of {}", rank, ranks());
  }
  return comms_[static_cast<size_t>(rank)];
}

void Communicators::all_reduce_sum_f32(int rank, float* buffer, size_t count, Stream stream) const {
  check(lib_,
        lib_.all_reduce(buffer, buffer, count, DataType::kFloat32, RedOp::kSum, comm(rank), stream),
        "ncclAllReduce");
}

void Communicators::all_gather_f32(int rank, const float* send, float* recv, size_t count,
                                   Stream stream) const {
  check(lib_, lib_.all_gather(send, recv, count, DataType::kFloat32, comm(rank), stream),
        "ncclAllGather");
}

}  // namespace paceline::nccl
