// NCCL on the GPU through paceline's communicators (src/exec/nccl_communicators.h), at one rank
// (the one-GPU machine): the all-reduce and the all-gather of device memory on a stream leave a
// rank's data, also captured into a CUDA graph and replayed, which the tensor-parallel forward's
// graphs need (docs/tensor-parallel.md). Skipped, saying why, without a GPU or without NCCL.
#include <cstdint>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "cuda_test_util.h"

#if PACELINE_HAVE_CUDA
#include <cuda_runtime.h>

#include "base/error.h"
#include "exec/nccl_communicators.h"

namespace paceline {
namespace {

std::unique_ptr<nccl::Library> load_or_skip(std::string* why) {
  try {
    return nccl::Library::load();
  } catch (const Error& e) {
    *why = e.what();
    return nullptr;
  }
}

std::vector<float> download(const float* d, size_t n) {
  std::vector<float> h(n);
  EXPECT_EQ(cudaMemcpy(h.data(), d, n * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
  return h;
}

TEST(CudaNccl, OneRanksCollectivesLeaveItsDataAlsoFromAGraph) {
  PACELINE_REQUIRE_GPU();
  std::string why;
  const std::unique_ptr<nccl::Library> lib = load_or_skip(&why);
  if (!lib) GTEST_SKIP() << why;
  int device = 0;
  ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
  const nccl::Communicators comms(*lib, {device});
  constexpr size_t kCount = 4096;
  std::vector<float> host(kCount);
  for (size_t i = 0; i < kCount; ++i) host[i] = 0.25f * static_cast<float>(i) - 100.0f;
  float* buffer = nullptr;
  float* gathered = nullptr;
  ASSERT_EQ(cudaMalloc(&buffer, kCount * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&gathered, kCount * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(buffer, host.data(), kCount * sizeof(float), cudaMemcpyHostToDevice),
            cudaSuccess);
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);

  comms.all_reduce_sum_f32(0, buffer, kCount, stream);
  comms.all_gather_f32(0, buffer, gathered, kCount, stream);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  EXPECT_EQ(download(buffer, kCount), host);
  EXPECT_EQ(download(gathered, kCount), host);

  // The same calls captured into a graph and replayed twice.
  ASSERT_EQ(cudaMemset(gathered, 0, kCount * sizeof(float)), cudaSuccess);
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  comms.all_reduce_sum_f32(0, buffer, kCount, stream);
  comms.all_gather_f32(0, buffer, gathered, kCount, stream);
  ASSERT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  for (int replay = 0; replay < 2; ++replay) {
    ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
  }
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  EXPECT_EQ(download(buffer, kCount), host);
  EXPECT_EQ(download(gathered, kCount), host);

  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
  cudaFree(buffer);
  cudaFree(gathered);
}

}  // namespace
}  // namespace paceline
#endif  // PACELINE_HAVE_CUDA
