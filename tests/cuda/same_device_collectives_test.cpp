// Collectives of ranks that share one GPU (exec/cuda/same_device_collectives.h), the ones the GPU
// tests join tensor-parallel ranks with: each rank a thread with its own stream, as the
// executor's ranks are. Every case runs both ways a call can go: eagerly (the ranks meet on the
// host) and captured into each rank's CUDA graph, then replayed (kernels that meet in device
// memory). An all-reduce leaves on every rank the sum over the ranks taken in rank order (the bits
// a host sum in that order gives), an all-gather puts each rank's slice in its slot of every
// rank's buffer (also in place), and graphs replayed many times between eager calls keep meeting
// (the barriers' generations live on the device).
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "cuda_test_util.h"

#if PACELINE_HAVE_CUDA
#include <cuda_runtime.h>

#include "base/error.h"
#include "exec/cuda/cuda_check.h"
#include "exec/cuda/device_buffer.h"
#include "exec/cuda/same_device_collectives.h"

namespace paceline {
namespace {

using cuda::DeviceBuffer;
using cuda::SameDeviceCollectives;

std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-4.0f, 4.0f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// Done before the ranks' streams (non-blocking, so not ordered after the legacy stream) start.
void upload(const std::vector<float>& host, const DeviceBuffer& dev) {
  PACELINE_CUDA_CHECK(
      cudaMemcpy(dev.as<float>(), host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice));
  PACELINE_CUDA_CHECK(cudaDeviceSynchronize());
}

std::vector<float> download(const DeviceBuffer& dev, size_t n) {
  std::vector<float> host(n);
  PACELINE_CUDA_CHECK(
      cudaMemcpy(host.data(), dev.as<float>(), n * sizeof(float), cudaMemcpyDeviceToHost));
  return host;
}

using RankWork = std::function<void(int, cudaStream_t)>;

// `ranks` threads, each with a stream of its own, as the executor's ranks.
class RankThreads {
 public:
  explicit RankThreads(int ranks) : streams_(static_cast<size_t>(ranks), nullptr) {
    for (cudaStream_t& s : streams_) {
      PACELINE_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    }
  }
  ~RankThreads() {
    for (cudaGraphExec_t e : graphs_) cudaGraphExecDestroy(e);
    for (cudaStream_t s : streams_) cudaStreamDestroy(s);
  }
  RankThreads(const RankThreads&) = delete;
  RankThreads& operator=(const RankThreads&) = delete;

  // f(r, stream) on every rank's thread at once; returns when every stream is idle.
  void each(const RankWork& f) {
    std::vector<std::thread> threads;
    for (size_t r = 0; r < streams_.size(); ++r) {
      threads.emplace_back([&, r] {
        PACELINE_CUDA_CHECK(cudaSetDevice(0));
        f(static_cast<int>(r), streams_[r]);
        PACELINE_CUDA_CHECK(cudaStreamSynchronize(streams_[r]));
      });
    }
    for (std::thread& t : threads) t.join();
  }
  // Captures f into a graph per rank (nothing runs, nobody meets).
  void capture(const RankWork& f) {
    graphs_.assign(streams_.size(), nullptr);
    each([&](int r, cudaStream_t s) {
      cudaGraph_t g = nullptr;
      PACELINE_CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
      f(r, s);
      PACELINE_CUDA_CHECK(cudaStreamEndCapture(s, &g));
      PACELINE_CUDA_CHECK(cudaGraphInstantiate(&graphs_[static_cast<size_t>(r)], g, 0));
      cudaGraphDestroy(g);
    });
  }
  // Launches every rank's graph on its thread.
  void replay() {
    each([&](int r, cudaStream_t s) {
      PACELINE_CUDA_CHECK(cudaGraphLaunch(graphs_[static_cast<size_t>(r)], s));
    });
  }

 private:
  std::vector<cudaStream_t> streams_;
  std::vector<cudaGraphExec_t> graphs_;
};

// run(r, stream) on `ranks` threads at once, eagerly or captured into a graph per rank that is
// then launched once.
void on_rank_threads(int ranks, bool graph, const RankWork& run) {
  RankThreads threads(ranks);
  if (!graph) {
    threads.each(run);
    return;
  }
  threads.capture(run);
  threads.replay();
}

// The sum over the ranks' inputs, in rank order.
std::vector<float> host_sum(const std::vector<std::vector<float>>& inputs) {
  std::vector<float> sum = inputs[0];
  for (size_t r = 1; r < inputs.size(); ++r) {
    for (size_t i = 0; i < sum.size(); ++i) sum[i] += inputs[r][i];
  }
  return sum;
}

class SameDeviceCollectivesBothWays : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override { PACELINE_REQUIRE_GPU(); }
  bool graph() const { return GetParam(); }
};

TEST_P(SameDeviceCollectivesBothWays, AllReduceLeavesTheRankOrderSumOnEveryRank) {
  for (int ranks : {1, 2, 3, 4}) {
    // Fewer elements than blocks, a ragged share, and a large buffer.
    for (size_t count : {size_t{1}, size_t{5}, size_t{4097}, size_t{1} << 20}) {
      SCOPED_TRACE(::testing::Message() << ranks << " ranks, " << count << " floats");
      SameDeviceCollectives all(ranks);
      std::vector<std::vector<float>> inputs;
      std::vector<DeviceBuffer> buffers;
      for (int r = 0; r < ranks; ++r) {
        inputs.push_back(random_floats(count, static_cast<uint32_t>(100 * ranks + r)));
        buffers.emplace_back(count * sizeof(float));
        upload(inputs.back(), buffers.back());
      }
      on_rank_threads(ranks, graph(), [&](int r, cudaStream_t s) {
        all.rank(r)->all_reduce_sum_f32(buffers[static_cast<size_t>(r)].as<float>(), count, s);
      });
      const std::vector<float> want = host_sum(inputs);
      for (int r = 0; r < ranks; ++r) {
        EXPECT_EQ(download(buffers[static_cast<size_t>(r)], count), want) << "rank " << r;
      }
    }
  }
}

TEST_P(SameDeviceCollectivesBothWays, AllGatherPutsEachRanksSliceInItsSlotOfEveryRank) {
  for (bool in_place : {false, true}) {
    for (int ranks : {2, 4}) {
      const size_t count = 3001;
      SCOPED_TRACE(::testing::Message() << ranks << " ranks, in place " << in_place);
      SameDeviceCollectives all(ranks);
      std::vector<std::vector<float>> slices;
      std::vector<DeviceBuffer> sends, recvs;
      for (int r = 0; r < ranks; ++r) {
        slices.push_back(random_floats(count, static_cast<uint32_t>(7 + r)));
        recvs.emplace_back(count * static_cast<size_t>(ranks) * sizeof(float));
        PACELINE_CUDA_CHECK(cudaMemset(recvs.back().as<void>(), 0xff, recvs.back().bytes()));
        PACELINE_CUDA_CHECK(cudaDeviceSynchronize());
        sends.emplace_back(count * sizeof(float));
        upload(slices.back(), sends.back());
        if (in_place) {
          PACELINE_CUDA_CHECK(cudaMemcpy(recvs.back().as<float>() + static_cast<size_t>(r) * count,
                                         slices.back().data(), count * sizeof(float),
                                         cudaMemcpyHostToDevice));
        }
      }
      on_rank_threads(ranks, graph(), [&](int r, cudaStream_t s) {
        float* recv = recvs[static_cast<size_t>(r)].as<float>();
        const float* send = in_place ? recv + static_cast<size_t>(r) * count
                                     : sends[static_cast<size_t>(r)].as<float>();
        all.rank(r)->all_gather_f32(send, recv, count, s);
      });
      std::vector<float> want;
      for (const std::vector<float>& s : slices) want.insert(want.end(), s.begin(), s.end());
      for (int r = 0; r < ranks; ++r) {
        EXPECT_EQ(download(recvs[static_cast<size_t>(r)], want.size()), want) << "rank " << r;
      }
    }
  }
}

TEST(SameDeviceCollectives, GraphsReplayedManyTimesBetweenEagerCallsKeepMeeting) {
  PACELINE_REQUIRE_GPU();
  const int ranks = 2;
  const size_t count = 50000;
  SameDeviceCollectives all(ranks);
  std::vector<DeviceBuffer> buffers, recvs;
  for (int r = 0; r < ranks; ++r) {
    buffers.emplace_back(count * sizeof(float));
    recvs.emplace_back(count * ranks * sizeof(float));
  }
  // Each rank's graph: an all-reduce of its buffer, then an all-gather of the sum into recv.
  const RankWork reduce_then_gather = [&](int r, cudaStream_t s) {
    float* buffer = buffers[static_cast<size_t>(r)].as<float>();
    all.rank(r)->all_reduce_sum_f32(buffer, count, s);
    all.rank(r)->all_gather_f32(buffer, recvs[static_cast<size_t>(r)].as<float>(), count, s);
  };
  RankThreads threads(ranks);
  threads.capture(reduce_then_gather);
  for (int round = 0; round < 12; ++round) {
    SCOPED_TRACE(::testing::Message() << "round " << round);
    std::vector<std::vector<float>> inputs;
    for (int r = 0; r < ranks; ++r) {
      inputs.push_back(random_floats(count, static_cast<uint32_t>(1000 * round + r)));
      upload(inputs.back(), buffers[static_cast<size_t>(r)]);
    }
    if (round % 3 == 2) {  // every third round eagerly, between replays
      threads.each(reduce_then_gather);
    } else {
      threads.replay();
    }
    const std::vector<float> sum = host_sum(inputs);
    std::vector<float> gathered;
    for (int r = 0; r < ranks; ++r) gathered.insert(gathered.end(), sum.begin(), sum.end());
    for (int r = 0; r < ranks; ++r) {
      ASSERT_EQ(download(buffers[static_cast<size_t>(r)], count), sum) << "rank " << r;
      ASSERT_EQ(download(recvs[static_cast<size_t>(r)], gathered.size()), gathered)
          << "rank " << r;
    }
  }
}

TEST(SameDeviceCollectives, RefusesRanksOutsideItsRange) {
  PACELINE_REQUIRE_GPU();
  EXPECT_THROW(SameDeviceCollectives(0), Error);
  EXPECT_THROW(SameDeviceCollectives(SameDeviceCollectives::kMaxRanks + 1), Error);
  SameDeviceCollectives two(2);
  EXPECT_THROW(two.rank(2), Error);
  EXPECT_EQ(two.rank(1)->rank(), 1);
  EXPECT_EQ(two.rank(1)->ranks(), 2);
}

INSTANTIATE_TEST_SUITE_P(EagerAndGraphs, SameDeviceCollectivesBothWays, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& i) {
                           return i.param ? std::string("Graph") : std::string("Eager");
                         });

}  // namespace
}  // namespace paceline

#else
TEST(SameDeviceCollectives, NeedsCudaBuild) { GTEST_SKIP() << "this build has no CUDA"; }
#endif
