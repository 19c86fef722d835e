// --max-step-ms under the simulator: the same scheduler code cuts prefills by the cost model's
// prediction (the time the virtual clock then advances by), so a simulated server with the cap
// chunks as the real one does and no simulated step is over the cap.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "base/clock.h"
#include "engine/engine_core.h"
#include "linear_cost.h"
#include "sim/sim_executor.h"

namespace paceline::sim {
namespace {

using test_util::kMs;
using test_util::LinearCost;

SchedulerConfig config(double max_step_ms) {
  SchedulerConfig c;
  c.max_model_len = 4096;
  c.block_size = 16;
  c.num_kv_blocks = 256;
  c.max_num_batched_tokens = 2048;
  c.max_step_ms = max_step_ms;
  return c;
}

// The prefill steps' (tokens, predicted ns) of one 1,000-token request.
std::vector<std::pair<int64_t, int64_t>> prefill_steps(double max_step_ms) {
  VirtualClock clock;
  LinearCost cost;  // prefill: 100 ms + 1 ms per token
  ExecutorCapabilities caps;
  caps.kv = {256, 16};
  EngineCore core(config(max_step_ms), std::make_unique<SimExecutor>(cost, caps), clock);
  RequestParams p;
  p.max_tokens = 2;
  p.ignore_eos = true;
  core.add(1, std::vector<int32_t>(1000, 7), p);
  std::vector<std::pair<int64_t, int64_t>> steps;
  while (core.has_unfinished()) {
    const std::optional<StepStart> s = core.begin_step();
    if (!s) break;
    if (s->plan->kind == ForwardKind::kPrefill)
      steps.emplace_back(s->plan->num_tokens(), s->duration_ns);
    clock.set_ns(clock.now_ns() + s->duration_ns);
    core.end_step();
  }
  return steps;
}

TEST(SimStepCap, PrefillChunksAreCutToTheCapByTheCostModel) {
  using Steps = std::vector<std::pair<int64_t, int64_t>>;
  // 300 ms: 100 ms + 200 tokens per forward.
  EXPECT_EQ(prefill_steps(300), (Steps{{200, 300 * kMs},
                                       {200, 300 * kMs},
                                       {200, 300 * kMs},
                                       {200, 300 * kMs},
                                       {200, 300 * kMs}}));
  EXPECT_EQ(prefill_steps(0), (Steps{{1000, 1100 * kMs}}));  // off: the token budget alone
}

}  // namespace
}  // namespace paceline::sim
