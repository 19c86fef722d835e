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
#include "prometheus_text.h"

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
    r.kv_fp8_clamped = clamped_per_step;
    return r;
  }
  ExecutorCapabilities capabilities() const override { return caps_; }
  bool fail = false;
  int64_t clamped_per_step = 0;  // K/V values each step reports its FP8 store clamped

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

// vLLM's request-level series, timed on the core's clock at the end of each step: 2 ms queued,
// a 5 ms prefill that gives the first token, two 5 ms decodes.
TEST(EngineCore, RequestLatenciesAreTheCoresClockAtEachStepsEnd) {
  Rig rig;
  rig.core.add(1, std::vector<int32_t>(10, 3), max_tokens(3));
  rig.clock.advance_ns(2'000'000);
  rig.step();
  rig.step();
  const std::vector<RequestOutput> out = rig.step();
  ASSERT_EQ(out.size(), 1u);
  ASSERT_TRUE(out[0].finished);
  const testing::PromText m = testing::parse_prometheus(rig.metrics.render_prometheus("p:"));
  EXPECT_EQ(m.problems, std::vector<std::string>{});
  auto count = [&](const std::string& name) { return m.value("p:" + name + "_count"); };
  auto sum = [&](const std::string& name) { return m.value("p:" + name + "_sum").value_or(-1); };
  EXPECT_EQ(count("time_to_first_token_seconds"), 1);
  EXPECT_NEAR(sum("time_to_first_token_seconds"), 0.007, 1e-12);
  EXPECT_EQ(count("inter_token_latency_seconds"), 2);
  EXPECT_NEAR(sum("inter_token_latency_seconds"), 0.010, 1e-12);
  EXPECT_EQ(count("time_per_output_token_seconds"), 2);
  EXPECT_EQ(count("request_time_per_output_token_seconds"), 1);
  EXPECT_NEAR(sum("request_time_per_output_token_seconds"), 0.005, 1e-12);
  EXPECT_NEAR(sum("e2e_request_latency_seconds"), 0.017, 1e-12);
  EXPECT_NEAR(sum("request_queue_time_seconds"), 0.002, 1e-12);
  EXPECT_NEAR(sum("request_prefill_time_seconds"), 0.005, 1e-12);
  EXPECT_NEAR(sum("request_decode_time_seconds"), 0.010, 1e-12);
  EXPECT_NEAR(sum("request_inference_time_seconds"), 0.015, 1e-12);
  EXPECT_EQ(sum("request_prompt_tokens"), 10);
  EXPECT_EQ(sum("request_generation_tokens"), 3);
  EXPECT_EQ(sum("request_params_max_tokens"), 3);
  // vLLM's bounds: the 7 ms TTFT is above 0.005 and at most 0.01.
  EXPECT_EQ(m.value("p:time_to_first_token_seconds_bucket", {{"le", "0.005"}}), 0);
  EXPECT_EQ(m.value("p:time_to_first_token_seconds_bucket", {{"le", "0.01"}}), 1);
  EXPECT_EQ(m.value("p:request_prompt_tokens_bucket", {{"le", "10"}}), 1);
}

// A request cancelled while waiting never ran: it has an end-to-end latency, no phases.
TEST(EngineCore, ARequestCancelledWhileWaitingHasNoPhases) {
  Rig rig;
  rig.core.add(1, std::vector<int32_t>(10, 3), max_tokens(3));
  rig.clock.advance_ns(4'000'000);
  ASSERT_TRUE(rig.core.cancel(1));
  const testing::PromText m = testing::parse_prometheus(rig.metrics.render_prometheus("p:"));
  EXPECT_EQ(m.value("p:e2e_request_latency_seconds_count"), 1);
  EXPECT_NEAR(m.value("p:e2e_request_latency_seconds_sum").value_or(-1), 0.004, 1e-12);
  EXPECT_EQ(m.value("p:request_queue_time_seconds_count"), 0);
  EXPECT_EQ(m.value("p:time_to_first_token_seconds_count"), 0);
  EXPECT_EQ(m.value("p:request_success_total", {{"finished_reason", "abort"}}), 1);
}

// k = 2 drafts at acceptance length 2: each verify commits one draft and the bonus token; the
// last verify, one token from max_tokens, has one draft.
TEST(EngineCore, SpeculativeDecodingCountsDraftsAndAcceptedTokens) {
  SchedulerConfig config = small_config();
  config.speculative.speculative_tokens = 2;
  config.speculative.acceptance_length = 2.0;
  Rig rig(ScriptedExecutor::default_caps(), config);
  const std::string before = rig.metrics.render_prometheus("p:");
  EXPECT_NE(before.find("p:spec_decode_num_drafts_total 0\n"), std::string::npos) << before;
  EXPECT_NE(before.find("p:spec_decode_num_accepted_tokens_per_pos_total{position=\"1\"} 0\n"),
            std::string::npos);
  rig.core.add(1, std::vector<int32_t>(10, 3), max_tokens(9));
  int64_t verify_rows = 0, drafts = 0;
  while (rig.core.has_unfinished()) {
    const std::optional<StepStart> s = rig.core.begin_step();
    ASSERT_TRUE(s);
    for (const ScheduledSeq& row : s->plan->seqs) {
      if (row.num_logits > 1) {
        ++verify_rows;
        drafts += row.num_logits - 1;
      }
    }
    rig.clock.advance_ns(s->duration_ns);
    rig.core.end_step();
  }
  EXPECT_EQ(verify_rows, 4);  // 1 token from the prefill, then 2 + 2 + 2 + 2
  const testing::PromText m = testing::parse_prometheus(rig.metrics.render_prometheus("p:"));
  EXPECT_EQ(m.problems, std::vector<std::string>{});
  EXPECT_EQ(m.value("p:spec_decode_num_drafts_total"), verify_rows);
  EXPECT_EQ(m.value("p:spec_decode_num_draft_tokens_total"), drafts);
  EXPECT_EQ(m.value("p:spec_decode_num_accepted_tokens_total"), 4);
  EXPECT_EQ(m.value("p:spec_decode_num_accepted_tokens_per_pos_total", {{"position", "0"}}), 4);
  EXPECT_EQ(m.value("p:spec_decode_num_accepted_tokens_per_pos_total", {{"position", "1"}}), 0);
  EXPECT_EQ(m.value("p:generation_tokens_total"), 9);
}

// Before any request, every series is there at zero: the delayer's, each forward kind's, the
// request histograms; and the whole text passes promtool's rules.
// An FP8 KV cache's store clamps values beyond e4m3's range (the CUDA executor counts them on
// the device and reports each step's): the core adds them to kv_cache_fp8_clamped_total.
TEST(EngineCore, ValuesAnFp8StoreClampedAreCounted) {
  Rig rig;
  rig.executor->clamped_per_step = 3;
  rig.core.add(1, std::vector<int32_t>(10, 3), max_tokens(2));
  rig.step();
  rig.step();
  rig.executor->clamped_per_step = 0;
  rig.step();
  const testing::PromText m = testing::parse_prometheus(rig.metrics.render_prometheus("p:"));
  EXPECT_EQ(m.value("p:kv_cache_fp8_clamped_total", {}), 6);
}

TEST(EngineCore, EverySeriesExistsFromTheStart) {
  SchedulerConfig config = small_config();
  config.delayer.enabled = true;
  config.delayer.prefill_decode_interval = 4;
  Rig rig(ScriptedExecutor::default_caps(), config);
  rig.metrics.set_constant_labels({{"model_name", "tiny"}});
  const testing::PromText m = testing::parse_prometheus(rig.metrics.render_prometheus("vllm:"));
  EXPECT_EQ(m.problems, std::vector<std::string>{});
  for (const char* name :
       {"time_to_first_token_seconds", "inter_token_latency_seconds",
        "time_per_output_token_seconds", "request_time_per_output_token_seconds",
        "e2e_request_latency_seconds", "request_queue_time_seconds",
        "request_prefill_time_seconds", "request_decode_time_seconds",
        "request_inference_time_seconds", "request_prompt_tokens", "request_generation_tokens",
        "request_params_max_tokens", "request_success_total", "prompt_tokens_total",
        "generation_tokens_total", "num_requests_running", "num_requests_waiting",
        "kv_cache_usage_perc", "kv_cache_blocks", "prefix_cache_queries_total",
        "prefix_cache_hits_total", "num_preemptions_total", "prefill_delayer_decisions_total",
        "prefill_delayer_hold_rate", "step_time_seconds", "kv_cache_fp8_clamped_total"}) {
    EXPECT_TRUE(m.families.contains(std::string("vllm:") + name)) << name;
  }
  for (const char* kind : {"prefill", "decode", "mixed"}) {
    EXPECT_EQ(m.value("vllm:step_time_seconds_count", {{"kind", kind}}), 0) << kind;
  }
  EXPECT_EQ(m.value("vllm:prefill_delayer_decisions_total",
                    {{"outcome", "hold"}, {"model_name", "tiny"}}),
            0);
  for (const auto& [name, family] : m.families) {
    for (const testing::PromSample& s : family.samples) {
      EXPECT_EQ(s.labels.count("model_name"), 1u) << s.name;
    }
  }
}

}  // namespace
}  // namespace paceline
