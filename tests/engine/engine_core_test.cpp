// The engine core driven directly, on a virtual clock: begin_step gives the plan and its cost,
// end_step its outputs; cancel frees at once and drops the row in flight; a failed executor ends
// its rows as aborts; the executor's report sizes the scheduler and heads the step log.
#include "engine/engine_core.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "base/error.h"

namespace paceline {
namespace {

constexpr int64_t kStepNs = 5'000'000;

// Token 7 for every logit row; each step "takes" kStepNs; throws while `fail` is set.
class ScriptedExecutor final : public Executor {
 public:
  explicit ScriptedExecutor(ExecutorCapabilities caps = default_caps()) : caps_(std::move(caps)) {}
  static ExecutorCapabilities default_caps() {
    ExecutorCapabilities x;
    x.kv = {32, 4};
    x.kv_dtype = "float32";
    x.kv_element_bytes = 4;
    return x;
  }
  StepResult execute(const StepPlan& plan) override {
    if (fail) throw std::runtime_error("device lost");
    StepResult r;
    r.step_id = plan.step_id;
    for (const auto& s : plan.seqs)
      r.seqs.push_back({s.request_id, std::vector<int32_t>(s.num_logits, 7)});
    r.step_time_ns = kStepNs;
    return r;
  }
  ExecutorCapabilities capabilities() const override { return caps_; }
  bool fail = false;

 private:
  ExecutorCapabilities caps_;
};

SchedulerConfig small_config() {
  SchedulerConfig c;
  c.max_model_len = 128;
  c.max_num_batched_tokens = 64;
  c.delayer.enabled = false;
  return c;
}

RequestParams max_tokens(int64_t n) {
  RequestParams p;
  p.max_tokens = n;
  p.ignore_eos = true;
  return p;
}

struct Rig {
  explicit Rig(ExecutorCapabilities caps = ScriptedExecutor::default_caps(),
               SchedulerConfig config = small_config())
      : executor(new ScriptedExecutor(std::move(caps))),
        core(config, std::unique_ptr<Executor>(executor), clock, &metrics) {}
  // One step on the virtual clock: begin, jump by its duration, end.
  std::vector<RequestOutput> step() {
    const std::optional<StepStart> s = core.begin_step();
    if (!s) return {};
    clock.advance_ns(s->duration_ns);
    return core.end_step();
  }
  VirtualClock clock;
  MetricsRegistry metrics;
  ScriptedExecutor* executor;  // owned by the core
  EngineCore core;
};

TEST(EngineCore, BeginStepGivesThePlanAndItsCostEndStepItsOutputs) {
  Rig rig;
  rig.core.add(1, std::vector<int32_t>(10, 3), max_tokens(3));
  const std::optional<StepStart> s = rig.core.begin_step();
  ASSERT_TRUE(s);
  EXPECT_EQ(s->plan->kind, ForwardKind::kPrefill);
  EXPECT_EQ(s->plan->seqs.size(), 1u);
  // The virtual clock does not move inside execute: the executor's own time is the cost.
  EXPECT_EQ(s->duration_ns, kStepNs);
  EXPECT_TRUE(rig.core.step_in_flight());
  EXPECT_THROW(rig.core.begin_step(), Error);
  std::vector<RequestOutput> out = rig.core.end_step();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].new_token_ids, std::vector<int32_t>{7});
  EXPECT_FALSE(out[0].finished);
  rig.step();
  out = rig.step();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].finished);
  EXPECT_EQ(out[0].usage.completion_tokens, 3);
  EXPECT_FALSE(rig.core.has_unfinished());
  EXPECT_FALSE(rig.core.begin_step());
}

TEST(EngineCore, ACancelDuringTheStepFreesAtOnceAndDropsTheRow) {
  Rig rig;
  rig.core.add(1, std::vector<int32_t>(10, 3), max_tokens(20));
  rig.core.add(2, std::vector<int32_t>(10, 4), max_tokens(20));
  rig.step();  // both prefills
  ASSERT_TRUE(rig.core.begin_step());
  const std::optional<RequestOutput> aborted = rig.core.cancel(1);
  ASSERT_TRUE(aborted);
  EXPECT_EQ(aborted->finish_reason, FinishReason::kAbort);
  // Request 1's blocks are back before its step ends; request 2 still holds its three.
  EXPECT_EQ(rig.core.scheduler().kv().num_free_blocks(), 32 - 3);
  const std::vector<RequestOutput> out = rig.core.end_step();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].request_id, 2u);
  EXPECT_FALSE(rig.core.cancel(1));  // gone: nothing more to say
  const std::string text = rig.metrics.render_prometheus("paceline:");
  EXPECT_NE(text.find("request_success_total{finished_reason=\"abort\"} 1"), std::string::npos)
      << text;
}

TEST(EngineCore, AFailedStepEndsItsRowsAsAbortsAndTheCoreGoesOn) {
  Rig rig;
  rig.core.add(1, std::vector<int32_t>(10, 3), max_tokens(5));
  rig.executor->fail = true;
  const std::optional<StepStart> s = rig.core.begin_step();  // no throw
  ASSERT_TRUE(s);
  const std::vector<RequestOutput> out = rig.core.end_step();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].finished);
  EXPECT_EQ(out[0].finish_reason, FinishReason::kAbort);
  EXPECT_EQ(rig.core.scheduler().kv().num_free_blocks(), 32);
  rig.executor->fail = false;
  rig.core.add(2, std::vector<int32_t>(10, 3), max_tokens(1));
  const std::vector<RequestOutput> next = rig.step();
  ASSERT_EQ(next.size(), 1u);
  EXPECT_TRUE(next[0].finished);
  EXPECT_EQ(next[0].finish_reason, FinishReason::kLength);
}

TEST(EngineCore, TheExecutorsReportSizesTheScheduler) {
  ExecutorCapabilities caps = ScriptedExecutor::default_caps();
  caps.graph_sizes = {1, 2, 4};
  caps.max_num_batched_tokens = 64;
  Rig rig(caps);
  EXPECT_EQ(rig.core.config().num_kv_blocks, 32);
  EXPECT_EQ(rig.core.config().block_size, 4);
  EXPECT_EQ(rig.core.scheduler().cudagraph_capture_sizes(), (std::vector<int32_t>{1, 2, 4}));

  caps.max_num_batched_tokens = 32;  // smaller than the scheduler's budget of 64
  try {
    Rig too_small(caps);
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--max-num-batched-tokens 64"), std::string::npos)
        << e.what();
  }
}

TEST(EngineCore, TheStepLogHeaderIsTheExecutorsReportAndEachStepItsCost) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("paceline-core-step-log-" + std::to_string(::getpid()) + ".jsonl");
  {
    Rig rig;
    rig.core.set_step_log(std::make_unique<StepLog>(path.string()), "test", "tiny");
    rig.clock.set_ns(1'000'000'000);
    rig.core.add(1, std::vector<int32_t>(10, 3), max_tokens(2));
    rig.step();
    rig.step();
  }
  std::ifstream in(path);
  std::vector<nlohmann::json> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
  std::filesystem::remove(path);
  ASSERT_EQ(lines.size(), 3u);
  const nlohmann::json& h = lines[0]["header"];
  EXPECT_EQ(h["device"], "test");
  EXPECT_EQ(h["kv_blocks"], 32);
  EXPECT_EQ(h["block_size"], 4);
  EXPECT_EQ(h["kv_element_bytes"], 4);
  EXPECT_EQ(h["kv_dtype"], "float32");
  // Steps start on the core's clock and last what the executor said; no host time passes.
  EXPECT_EQ(lines[1]["t_us"], 1'000'000);
  EXPECT_EQ(lines[2]["t_us"], 1'005'000);
  EXPECT_DOUBLE_EQ(lines[2]["execute_us"].get<double>(), 5000.0);
  EXPECT_DOUBLE_EQ(lines[2]["host_us"].get<double>(), 0.0);
}

}  // namespace
}  // namespace paceline
