#include "exec/cuda/same_device_collectives.h"

#include "base/error.h"
#include "exec/cuda/cuda_check.h"

namespace paceline::cuda {
namespace {

// Whether `stream` is being captured into a CUDA graph.
bool capturing(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  PACELINE_CUDA_CHECK(cudaStreamIsCapturing(stream, &status));
  return status == cudaStreamCaptureStatusActive;
}

}  // namespace

class SameDeviceCollectives::Rank final : public RankCollectives {
 public:
  Rank(SameDeviceCollectives& all, int rank) : all_(all), rank_(rank) {}
  int rank() const override { return rank_; }
  int ranks() const override { return all_.ranks_; }
  void all_reduce_sum_f32(float* buffer, size_t count, cudaStream_t stream) override {
    if (!capturing(stream)) {
      all_.host_all_reduce(rank_, buffer, count, stream);
      return;
    }
    PACELINE_CUDA_CHECK(launch_same_device_all_reduce_f32(all_.exchange(), rank_, all_.ranks_,
                                                          buffer, count, stream));
  }
  void all_gather_f32(const float* send, float* recv, size_t count,
                      cudaStream_t stream) override {
    if (!capturing(stream)) {
      all_.host_all_gather(rank_, send, recv, count, stream);
      return;
    }
    PACELINE_CUDA_CHECK(launch_same_device_all_gather_f32(all_.exchange(), rank_, all_.ranks_,
                                                          send, recv, count, stream));
  }

 private:
  SameDeviceCollectives& all_;
  int rank_;
};

namespace {

int checked_ranks(int ranks) {
  if (ranks < 1 || ranks > SameDeviceCollectives::kMaxRanks) {
    fail("same-device collectives: {} ranks, not 1 to {}", ranks,
         SameDeviceCollectives::kMaxRanks);
  }
  return ranks;
}

}  // namespace

SameDeviceCollectives::SameDeviceCollectives(int ranks)
    : ranks_(checked_ranks(ranks)),
      exchange_(sizeof(SameDeviceExchange)),
      meet_(ranks),
      published_(static_cast<size_t>(ranks), nullptr) {
  PACELINE_CUDA_CHECK(load_same_device_collective_kernels());
  // The legacy stream does not order the ranks' non-blocking streams: wait for the zeros here.
  PACELINE_CUDA_CHECK(cudaMemset(exchange_.as<void>(), 0, sizeof(SameDeviceExchange)));
  PACELINE_CUDA_CHECK(cudaDeviceSynchronize());
  for (int r = 0; r < ranks; ++r) each_.push_back(std::make_unique<Rank>(*this, r));
}

SameDeviceCollectives::~SameDeviceCollectives() = default;

RankCollectives* SameDeviceCollectives::rank(int r) {
  if (r < 0 || r >= ranks_) fail("same-device collectives: rank {} of {}", r, ranks_);
  return each_[static_cast<size_t>(r)].get();
}

void SameDeviceCollectives::host_all_reduce(int rank, float* buffer, size_t count,
                                            cudaStream_t stream) {
  PACELINE_CUDA_CHECK(cudaStreamSynchronize(stream));
  published_[static_cast<size_t>(rank)] = buffer;
  meet_.arrive_and_wait();  // every rank's partial is in place
  std::vector<float> sum(count), part(count);
  for (int r = 0; r < ranks_; ++r) {
    PACELINE_CUDA_CHECK(cudaMemcpy(r == 0 ? sum.data() : part.data(),
                                   published_[static_cast<size_t>(r)], count * sizeof(float),
                                   cudaMemcpyDeviceToHost));
    if (r > 0) {
      for (size_t i = 0; i < count; ++i) sum[i] += part[i];
    }
  }
  meet_.arrive_and_wait();  // every rank has read every partial
  // On the rank's stream, so that its next kernels read the sum (a cudaMemcpy would go on the
  // legacy stream, which does not order non-blocking streams).
  PACELINE_CUDA_CHECK(cudaMemcpyAsync(buffer, sum.data(), count * sizeof(float),
                                      cudaMemcpyHostToDevice, stream));
  PACELINE_CUDA_CHECK(cudaStreamSynchronize(stream));  // sum is read until then
}

void SameDeviceCollectives::host_all_gather(int rank, const float* send, float* recv,
                                            size_t count, cudaStream_t stream) {
  PACELINE_CUDA_CHECK(cudaStreamSynchronize(stream));
  published_[static_cast<size_t>(rank)] = send;
  meet_.arrive_and_wait();
  for (int r = 0; r < ranks_; ++r) {
    float* dst = recv + static_cast<size_t>(r) * count;
    const float* src = published_[static_cast<size_t>(r)];
    if (dst == src) continue;  // in place: already there
    PACELINE_CUDA_CHECK(
        cudaMemcpyAsync(dst, src, count * sizeof(float), cudaMemcpyDeviceToDevice, stream));
  }
  PACELINE_CUDA_CHECK(cudaStreamSynchronize(stream));
  meet_.arrive_and_wait();  // nobody overwrites a slice another rank still reads
}

}  // namespace paceline::cuda
