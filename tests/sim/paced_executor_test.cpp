// The paced executor: the inner executor's answer, held until the time the simulator would have
// charged for the step (the cost model's prediction plus the host tier's copies) has passed on
// the given clock. Waits are recorded, not slept: no test here reads a real clock.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "base/clock.h"
#include "exec/null_executor.h"
#include "linear_cost.h"
#include "sim/paced_executor.h"
#include "sim/sim_executor.h"

namespace paceline::sim {
namespace {

using test_util::kMs;
using test_util::LinearCost;

struct Rig {
  VirtualClock clock{5 * kMs};
  std::vector<int64_t> waits;  // the deadlines asked for
  const KvTransferCost copies{1'000'000, 1e9};  // a block copy takes 1 ms
  PacedExecutor paced{std::make_unique<NullExecutor>(KvCacheShape{64, 16}, 4096,
                                                     std::vector<int64_t>{}, 8),
                      std::make_unique<LinearCost>(), copies, clock,
                      [this](int64_t deadline) {
                        waits.push_back(deadline);
                        clock.set_ns(deadline);
                      }};
};

StepPlan prefill(int64_t tokens) {
  StepPlan p;
  p.step_id = 1;
  p.kind = ForwardKind::kPrefill;
  ScheduledSeq s;
  s.request_id = 7;
  s.tokens.assign(static_cast<size_t>(tokens), 11);
  s.num_logits = 1;
  p.seqs.push_back(std::move(s));
  return p;
}

TEST(PacedExecutor, HoldsAStepUntilTheCostModelsTimeHasPassed) {
  Rig rig;
  const StepResult r = rig.paced.execute(prefill(40));  // 100 ms + 40 ms
  EXPECT_EQ(rig.waits, (std::vector<int64_t>{5 * kMs + 140 * kMs}));
  EXPECT_EQ(r.step_time_ns, 140 * kMs);
  ASSERT_EQ(r.seqs.size(), 1u);
  EXPECT_EQ(r.seqs[0].request_id, 7u);
  EXPECT_EQ(r.seqs[0].tokens.size(), 1u);  // the null executor's answer
}

TEST(PacedExecutor, ChargesTheHostTiersCopiesAsTheSimulatorDoes) {
  Rig rig;
  StepPlan p = prefill(40);
  p.kv_transfers.stores = {{1, 1}, {2, 2}, {3, 3}};
  p.kv_transfers.loads = {{4, 4}};
  rig.paced.execute(p);
  // The longer direction: three stores, 1 ms each, on top of the forward.
  EXPECT_EQ(rig.waits, (std::vector<int64_t>{5 * kMs + 143 * kMs}));

  LinearCost cost;
  ExecutorCapabilities caps;
  caps.kv = {64, 16};
  SimExecutor sim(cost, caps);
  sim.set_transfer_cost(rig.copies.block_bytes, rig.copies.bytes_per_s);
  EXPECT_EQ(sim.execute(p).step_time_ns, 143 * kMs);
}

TEST(PacedExecutor, AnEmptyPlanTakesNoTime) {
  Rig rig;
  StepPlan p;
  p.step_id = 1;
  rig.paced.execute(p);
  EXPECT_TRUE(rig.waits.empty());
}

TEST(PacedExecutor, ReportsTheInnerExecutorsKvAndTheCostModelForTheStepCap) {
  Rig rig;
  EXPECT_EQ(rig.paced.capabilities().kv.num_blocks, 64);
  EXPECT_EQ(rig.paced.capabilities().num_host_kv_blocks, 8);
  ASSERT_NE(rig.paced.step_cost_model(), nullptr);
  StepWork w;
  w.kind = ForwardKind::kDecode;
  w.num_seqs = 3;
  w.tokens = 3;
  EXPECT_EQ(rig.paced.step_cost_model()->predict_ns(w), 13 * kMs);
}

}  // namespace
}  // namespace paceline::sim
