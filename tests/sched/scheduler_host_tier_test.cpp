// The host KV tier seen from the scheduler: a load that fails is recomputed, and the step it
// failed in is planned again for everyone else.
#include <optional>
#include <vector>

#include <gtest/gtest.h>

#include "fake_executor.h"
#include "sched/scheduler.h"

namespace paceline {
namespace {

using testing::FakeExecutor;
using testing::max_tokens;
using testing::prompt_of;
using testing::run_step;

// 8 GPU blocks of 4 tokens, 16 host blocks; decodes and prefills share a forward.
SchedulerConfig tier_config() {
  SchedulerConfig c;
  c.schedule = ScheduleKind::kMixed;
  c.max_num_seqs = 4;
  c.max_num_batched_tokens = 64;
  c.max_model_len = 64;
  c.block_size = 4;
  c.num_kv_blocks = 8;
  c.num_host_kv_blocks = 16;
  return c;
}

// The executor's answer when some of a step's loads did not land: no forward, no tokens.
StepResult loads_failed(const StepPlan& plan, std::vector<BlockCopy> failed) {
  StepResult r;
  r.step_id = plan.step_id;
  for (const ScheduledSeq& s : plan.seqs) r.seqs.push_back({s.request_id, {}});
  r.failed_loads = std::move(failed);
  return r;
}

TEST(SchedulerHostTier, AFailedLoadIsRecomputedAndTheRestOfTheStepRunsAgain) {
  VirtualClock clock;
  Scheduler s(tier_config(), clock);
  FakeExecutor exec;
  const auto a = prompt_of(17, 1000);  // 4 full blocks + 1 token
  s.add_request(1, a, max_tokens(1));
  run_step(s, exec);
  s.add_request(2, prompt_of(29, 2000), max_tokens(1));  // all 8 blocks: A's 4 go to the host
  ASSERT_EQ(run_step(s, exec).plan.kv_transfers.stores.size(), 4u);
  s.add_request(3, prompt_of(2, 3000), max_tokens(6));  // C: decodes while A comes back
  run_step(s, exec);

  s.add_request(4, a, max_tokens(2));
  const StepPlan failing = s.schedule();
  ASSERT_EQ(testing::ids_of(failing), (std::vector<uint64_t>{3, 4}));
  ASSERT_EQ(failing.kv_transfers.loads.size(), 4u);
  EXPECT_EQ(failing.seqs[1].start_pos, 16);
  const int64_t host_cached = s.kv().host_pool()->num_cached();
  // A's block 1 does not arrive; blocks 0, 2 and 3 do.
  EXPECT_TRUE(s.update(failing, loads_failed(failing, {failing.kv_transfers.loads[1]})).empty());
  EXPECT_EQ(s.kv().host_pool()->num_cached(), host_cached - 1);
  EXPECT_EQ(s.find(4)->num_computed_tokens, 4);  // back to the first block it lacks
  EXPECT_EQ(s.find(3)->num_output_tokens(), 1);  // C's decode did not run either
  SchedulerStats st = s.stats();
  EXPECT_EQ(st.kv_load_failures, 1);
  EXPECT_EQ(st.kv_loaded_blocks, 3);
  EXPECT_EQ(st.prefix_cache_host_hits, 4);

  const auto again = run_step(s, exec);
  ASSERT_EQ(testing::ids_of(again.plan), (std::vector<uint64_t>{3, 4}));
  EXPECT_TRUE(again.plan.kv_transfers.loads.empty());
  EXPECT_EQ(again.plan.seqs[0].start_pos, failing.seqs[0].start_pos);  // the same decode
  EXPECT_EQ(again.plan.seqs[1].start_pos, 4);
  EXPECT_EQ(again.plan.seqs[1].tokens, std::vector<int32_t>(a.begin() + 4, a.end()));
  int64_t c_tokens = 1;
  std::optional<RequestOutput> a_done;
  for (int i = 0; i < 10 && s.has_unfinished(); ++i) {
    for (const RequestOutput& out : run_step(s, exec).outputs) {
      if (out.request_id == 3) c_tokens += static_cast<int64_t>(out.new_token_ids.size());
      if (out.request_id == 4 && out.finished) a_done = out;
    }
  }
  for (const RequestOutput& out : again.outputs) {
    if (out.request_id == 3) c_tokens += static_cast<int64_t>(out.new_token_ids.size());
  }
  EXPECT_EQ(c_tokens, 6);  // every token of C, once
  ASSERT_TRUE(a_done.has_value());
  EXPECT_EQ(a_done->usage.completion_tokens, 2);
  EXPECT_EQ(a_done->usage.cached_tokens, 4);  // the hit shrank to what arrived before the gap
  EXPECT_EQ(s.kv().num_free_blocks(), s.kv().num_blocks());
}

}  // namespace
}  // namespace paceline
