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

// Under a copy budget: A's 4 full blocks pushed to the host (B takes every GPU block), C
// decoding if asked, and A back as request 4.
class SchedulerHostTierBudget : public ::testing::Test {
 protected:
  void start(int64_t budget, bool with_c, int64_t a_tokens_out) {
    SchedulerConfig c = tier_config();
    c.kv_offloading_max_blocks_per_step = budget;
    s_.emplace(c, clock_);
    s_->add_request(1, a_, max_tokens(1));
    run_step(*s_, exec_);
    s_->add_request(2, prompt_of(29, 2000), max_tokens(1));
    ASSERT_EQ(run_step(*s_, exec_).plan.kv_transfers.stores.size(), 4u);
    if (with_c) {
      s_->add_request(3, prompt_of(2, 3000), max_tokens(6));
      run_step(*s_, exec_);
    }
    s_->add_request(4, a_, max_tokens(a_tokens_out));
  }
  testing::Step step() { return run_step(*s_, exec_); }
  void run_out() {
    for (int i = 0; i < 10 && s_->has_unfinished(); ++i) step();
    EXPECT_FALSE(s_->has_unfinished());
  }

  VirtualClock clock_;
  FakeExecutor exec_;
  std::optional<Scheduler> s_;
  const std::vector<int32_t> a_ = prompt_of(17, 1000);
};

// --kv-offloading-max-blocks-per-step 2: A's 4 blocks come back over two forwards, and the block
// for its last token (whose eviction stores a block) in a third, where A prefills; C decodes in
// all three.
TEST_F(SchedulerHostTierBudget, ACopyBudgetSpreadsAReloadWhileDecodesGoOn) {
  start(/*budget=*/2, /*with_c=*/true, 2);
  const auto first = step();
  EXPECT_EQ(testing::ids_of(first.plan), (std::vector<uint64_t>{3}));  // C alone
  EXPECT_EQ(first.plan.kv_transfers.loads.size(), 2u);
  EXPECT_LE(first.plan.kv_transfers.stores.size(), 2u);
  EXPECT_EQ(s_->find(4)->status, RequestStatus::kRunning);
  EXPECT_EQ(s_->find(4)->num_computed_tokens, 8);
  const auto second = step();
  EXPECT_EQ(testing::ids_of(second.plan), (std::vector<uint64_t>{3}));
  EXPECT_EQ(second.plan.kv_transfers.loads.size(), 2u);
  EXPECT_EQ(s_->find(4)->num_computed_tokens, 16);
  const auto third = step();
  EXPECT_EQ(testing::ids_of(third.plan), (std::vector<uint64_t>{3, 4}));
  EXPECT_TRUE(third.plan.kv_transfers.loads.empty());
  EXPECT_EQ(third.plan.seqs[1].start_pos, 16);
  run_out();
  EXPECT_EQ(s_->stats().prefix_cache_host_hits, 16);
  EXPECT_EQ(s_->kv().num_free_blocks(), s_->kv().num_blocks());
  EXPECT_EQ(s_->kv().num_reserved_blocks(), 0);
}

// With nothing else to run, the budget protects no one: the reload goes in one forward.
TEST_F(SchedulerHostTierBudget, AReloadWithNothingElseRunningIsNotHeldBack) {
  start(/*budget=*/1, /*with_c=*/false, 1);
  const auto only = step();
  EXPECT_EQ(testing::ids_of(only.plan), (std::vector<uint64_t>{4}));
  EXPECT_EQ(only.plan.kv_transfers.loads.size(), 4u);
  EXPECT_EQ(only.plan.seqs[0].start_pos, 16);
}

// A request still waiting for its reload can be cancelled: its reserve and the host blocks it
// was to load go back.
TEST_F(SchedulerHostTierBudget, ACancelledReloadGivesBackItsReserveAndPins) {
  start(/*budget=*/1, /*with_c=*/true, 1);
  step();
  EXPECT_GT(s_->kv().num_reserved_blocks(), 0);
  ASSERT_TRUE(s_->cancel(4).has_value());
  EXPECT_EQ(s_->kv().num_reserved_blocks(), 0);
  run_out();
  s_->schedule();  // releases the pins of the last forward's copies
  const BlockPool& host = *s_->kv().host_pool();
  for (int32_t h = 0; h < host.num_blocks(); ++h) EXPECT_EQ(host.ref_count(h), 0) << h;
  EXPECT_EQ(s_->kv().num_free_blocks(), s_->kv().num_blocks());
}

}  // namespace
}  // namespace paceline
