// The kernel recorder of `paceline check --kernel-timeline` (exec/cuda/cupti_timeline.h): every
// kernel launched inside a window, eagerly or from a CUDA graph, comes back once with its name
// and a start before its end; kernels before the window do not.
#include <gtest/gtest.h>

#include "cuda_test_util.h"

#if PACELINE_HAVE_CUDA
#include <string>
#include <vector>

#include "exec/cuda/cuda_check.h"
#include "exec/cuda/cupti_timeline.h"
#include "exec/cuda/device_buffer.h"
#include "exec/cuda/kernels.h"

namespace paceline {
namespace {

TEST(CuptiTimeline, RecordsTheWindowsKernelsEagerAndFromAGraph) {
  PACELINE_REQUIRE_GPU();
  std::unique_ptr<cuda::CuptiTimeline> timeline = cuda::CuptiTimeline::start();
  constexpr int64_t kVocab = 1000;
  cuda::DeviceBuffer logits(2 * kVocab * sizeof(float)), out(2 * sizeof(int32_t));
  PACELINE_CUDA_CHECK(cudaMemset(logits.as<float>(), 0, 2 * kVocab * sizeof(float)));
  cudaStream_t stream = nullptr;
  PACELINE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  // A graph of two argmax launches, instantiated after the recorder started.
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  PACELINE_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < 2; ++i) {
    PACELINE_CUDA_CHECK(
        cuda::launch_argmax(logits.as<float>(), kVocab, 2, out.as<int32_t>(), stream));
  }
  PACELINE_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  PACELINE_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  // Before the window: not recorded.
  PACELINE_CUDA_CHECK(
      cuda::launch_argmax(logits.as<float>(), kVocab, 2, out.as<int32_t>(), stream));
  PACELINE_CUDA_CHECK(cudaStreamSynchronize(stream));

  timeline->begin_window();
  PACELINE_CUDA_CHECK(
      cuda::launch_argmax(logits.as<float>(), kVocab, 2, out.as<int32_t>(), stream));
  PACELINE_CUDA_CHECK(cudaGraphLaunch(exec, stream));
  PACELINE_CUDA_CHECK(cudaGraphLaunch(exec, stream));
  uint64_t dropped = 99;
  const std::vector<KernelRecord> kernels = timeline->end_window(&dropped);

  EXPECT_EQ(dropped, 0u);
  ASSERT_EQ(kernels.size(), 5u) << "one eager launch and two graphs of two";
  for (size_t i = 0; i < kernels.size(); ++i) {
    EXPECT_NE(short_kernel_name(kernels[i].name).find("argmax"), std::string::npos)
        << kernels[i].name;
    EXPECT_LT(kernels[i].start_ns, kernels[i].end_ns);
    if (i > 0) {
      EXPECT_LE(kernels[i - 1].end_ns, kernels[i].start_ns) << "one stream, in order";
    }
  }
  const KernelTimelineSummary s = summarize_kernel_timeline(kernels, 5);
  ASSERT_EQ(s.rows.size(), 1u);
  EXPECT_DOUBLE_EQ(s.rows[0].launches_per_step, 1.0);

  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
}

}  // namespace
}  // namespace paceline

#else
TEST(CuptiTimeline, NeedsCudaBuild) {
  GTEST_SKIP() << "this build has no CUDA";
}
#endif
