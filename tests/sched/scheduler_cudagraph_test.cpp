// Every decode plan carries the CUDA-graph batch size it replays.
#include <gtest/gtest.h>

#include "fake_executor.h"
#include "sched/scheduler.h"

namespace paceline {
namespace {

using testing::FakeExecutor;
using testing::max_tokens;
using testing::prompt_of;
using testing::run_step;
using testing::small_config;

StepPlan decode_plan_with(SchedulerConfig c, int num_requests) {
  VirtualClock clock;
  Scheduler s(c, clock);
  FakeExecutor exec;
  for (int id = 1; id <= num_requests; ++id)
    s.add_request(id, prompt_of(4, 1000 * id), max_tokens(4));
  StepPlan prefill = run_step(s, exec).plan;
  EXPECT_EQ(prefill.kind, ForwardKind::kPrefill);
  EXPECT_EQ(prefill.padded_batch_size, 0);
  StepPlan decode = run_step(s, exec).plan;
  EXPECT_EQ(decode.kind, ForwardKind::kDecode);
  EXPECT_EQ(decode.seqs.size(), static_cast<size_t>(num_requests));
  return decode;
}

TEST(CudagraphPadding, ADecodeBatchIsPaddedToTheNextCapturedSize) {
  SchedulerConfig c = small_config();  // max_num_seqs 8: sizes 1, 2, 4, 8
  EXPECT_EQ(decode_plan_with(c, 3).padded_batch_size, 4);
  EXPECT_EQ(decode_plan_with(c, 5).padded_batch_size, 8);
  EXPECT_EQ(decode_plan_with(c, 2).padded_batch_size, 2);
}

TEST(CudagraphPadding, ABatchAboveTheLargestCapturedSizeRunsEagerly) {
  SchedulerConfig c = small_config();
  c.cudagraph_capture_sizes = {2, 4};
  EXPECT_EQ(decode_plan_with(c, 5).padded_batch_size, 0);
  EXPECT_EQ(decode_plan_with(c, 3).padded_batch_size, 4);
}

TEST(CudagraphPadding, TheDefaultListIsCappedAtMaxNumSeqs) {
  VirtualClock clock;
  Scheduler s(small_config(), clock);
  EXPECT_EQ(s.cudagraph_capture_sizes(), (std::vector<int32_t>{1, 2, 4, 8}));
}

}  // namespace
}  // namespace paceline
