// Whole simulated runs over the bundled AgentX traces: Qwen3-8B on the H200 roofline, the real
// scheduler and the real replayer. Same inputs, same bytes; and the PrefillDelayer moves TTFT and
// ITL the way the field measured (../shared/specs/prefill-delayer.md), and does nothing at c=1.
#include <gtest/gtest.h>

#include <sstream>

#include "bench/report_files.h"
#include "model/config.h"
#include "sim/sim_driver.h"
#include "sim/profile_table.h"
#include "sim/sim_profile.h"
#include "base/error.h"
#include "../engine/prometheus_text.h"

namespace paceline::sim {
namespace {

constexpr int64_t kSec = 1'000'000'000;

// Qwen3-8B serves 131,072 tokens (YaRN); the recorded sessions grow to 838k. Sessions are cut
// before their first turn whose input plus the longest recorded output (18k) would not fit.
constexpr int64_t kMaxModelLen = 131072;
constexpr int64_t kMaxIsl = kMaxModelLen - 18432;

const std::vector<bench::AgentxSession>& recorded() {
  static const std::vector<bench::AgentxSession> sessions =
      bench::load_agentx(PACELINE_SOURCE_DIR "/../shared/traces/agentx");
  return sessions;
}

SimTraces traces_scaled(double isl_scale) {
  SimTraces t;
  t.transform = bench::TraceTransform{isl_scale, 1.0, kMaxIsl};
  t.sessions = bench::transform_sessions(recorded(), t.transform, &t.stats);
  return t;
}

const SimTraces& agentx() {
  static const SimTraces traces = traces_scaled(1.0);
  return traces;
}

struct H200 {
  H200() : model(model_config_load("qwen3-8b")), profile(load_sim_profile("h200", model, 0.9)) {}
  ModelConfig model;
  SimProfile profile;
};

const H200& h200() {
  static const H200 h;
  return h;
}

SimRunConfig config(int concurrency, int64_t duration_s, int64_t interval) {
  SimRunConfig c;
  c.scheduler.max_model_len = kMaxModelLen;
  c.scheduler.block_size = 16;
  c.scheduler.num_kv_blocks =
      h200().profile.kv_cache_bytes / (h200().model.kv_bytes_per_token(2) * 16);
  c.scheduler.delayer.prefill_decode_interval = interval;
  c.scheduler.delayer.max_num_batched_tokens = c.scheduler.max_num_batched_tokens;
  c.session.concurrency = concurrency;
  c.session.sampler = bench::SamplerKind::kShuffle;
  c.session.seed = 7;
  c.session.duration_ns = duration_s * kSec;
  return c;
}

std::string files_of(const SimRun& run) {
  std::ostringstream out;
  bench::write_records_jsonl(out, run.records);
  out << bench::summary_to_json(run.summary, {}).dump(2) << sim_engine_json(run).dump(2);
  return out.str();
}

TEST(SimRun, TheSameInputsGiveTheSameBytes) {
  const SimRunConfig c = config(8, 300, 4);
  const SimRun a = run_sim(agentx(), c, *h200().profile.cost);
  const SimRun b = run_sim(agentx(), c, *h200().profile.cost);
  EXPECT_FALSE(a.abort_reason) << *a.abort_reason;
  EXPECT_GT(a.summary.requests_completed, 20);
  EXPECT_EQ(files_of(a), files_of(b));
}

TEST(SimRun, UsesTheRealEnginesKvPrefixCacheAndCounters) {
  const SimRun run = run_sim(agentx(), config(8, 300, 0), *h200().profile.cost);
  EXPECT_TRUE(run.summary.valid) << run.summary.invalid_reasons.size();
  EXPECT_EQ(run.summary.requests_failed, 0);
  // Agentic turns re-send their context: the real prefix cache serves most of every prompt.
  EXPECT_GT(run.summary.prefix_cache_hit, 0.8);
  EXPECT_LE(run.summary.prefix_cache_hit, run.summary.trace_prefix_hit + 1e-9);
  EXPECT_EQ(run.engine.prefix_cache_hits > 0, true);
  EXPECT_GT(run.executor.steps, 1000);
  EXPECT_EQ(run.engine.prefill_steps + run.engine.decode_steps + run.engine.mixed_steps,
            run.executor.steps);
  EXPECT_FALSE(run.engine.delayer);  // interval 0 and no queue limit: no delayer
}

// The simulator reports vLLM's request-level series as serve does, from the same engine core on
// the virtual clock: one TTFT and one end-to-end latency per finished request, the phases adding
// up, and model_name on every series.
TEST(SimRun, MetricsHaveTheRequestLatenciesOnTheVirtualClock) {
  SimRunConfig c = config(8, 300, 0);
  c.model = "qwen3-8b";
  const SimRun run = run_sim(agentx(), c, *h200().profile.cost);
  const testing::PromText m = testing::parse_prometheus(run.metrics);
  EXPECT_EQ(m.problems, std::vector<std::string>{});
  auto v = [&](const std::string& name, testing::PromLabels labels = {}) {
    labels["model_name"] = "qwen3-8b";
    return m.value("paceline:" + name, labels).value_or(-1);
  };
  const double finished = v("request_success_total", {{"finished_reason", "stop"}}) +
                          v("request_success_total", {{"finished_reason", "length"}}) +
                          v("request_success_total", {{"finished_reason", "abort"}});
  EXPECT_GT(finished, 20);
  EXPECT_EQ(v("e2e_request_latency_seconds_count"), finished);
  EXPECT_EQ(v("request_generation_tokens_sum"), v("generation_tokens_total"));
  EXPECT_GT(v("time_to_first_token_seconds_count"), 20);
  EXPECT_GT(v("inter_token_latency_seconds_count"), v("time_to_first_token_seconds_count"));
  EXPECT_NEAR(v("request_inference_time_seconds_sum"),
              v("request_prefill_time_seconds_sum") + v("request_decode_time_seconds_sum"),
              1e-6 * v("request_inference_time_seconds_sum"));
  EXPECT_GT(v("request_decode_time_seconds_sum"), 0);
}

// A profile fitted to steps the roofline would take, logged on a machine that ran 50% slower for
// one stretch of 1,500 steps in every four: the kind of drift a shared server shows.
TableCostModel drifting_profile() {
  ProfileTable t;
  t.device = "h200";
  t.model = "qwen3-8b";
  t.kv_cache_bytes = h200().profile.kv_cache_bytes;
  t.kv_element_bytes = 2;
  t.points_per_knot = 8;
  t.time_ordered = true;
  double t_us = 0;
  for (int64_t i = 0; i < 6000; ++i) {
    const double drift = (i / 1500) % 4 == 3 ? 1.5 : 1.0;
    StepWork w;
    if (i % 20 == 0) {
      const int64_t cached = (i / 20) % 4 * 8192, tokens = 128 << ((i / 80) % 5);
      w.kind = ForwardKind::kPrefill;
      w.num_seqs = 1;
      w.tokens = tokens;
      w.logit_rows = 1;
      w.context = cached + tokens;
      w.attention = tokens * cached + tokens * (tokens + 1) / 2;
    } else {
      w.kind = ForwardKind::kDecode;
      w.num_seqs = w.tokens = w.logit_rows = 1 + i % 16;
      w.context = w.attention = w.num_seqs * (2000 + (i * 7919) % 30000);
    }
    const double us = static_cast<double>(h200().profile.cost->step_time_ns(w)) / 1000;
    t.points.push_back(work_point(w, us * drift));
    t.points.back().t_us = t_us;
    t_us += t.points.back().time_us;
  }
  return TableCostModel(std::move(t));
}

// Replaying the drift spreads the per-request latencies the way the drifting machine would, keeps
// the mean step time, and is as deterministic as the rest of the simulator.
TEST(SimRun, StepNoiseReplaysTheProfilesDrift) {
  const TableCostModel profile = drifting_profile();
  SimRunConfig c = config(8, 600, 0);
  const SimTraces traces = traces_scaled(0.1);
  const SimRun mean = run_sim(traces, c, profile);
  c.step_noise = StepNoiseMode::kReplay;
  c.step_noise_seed = 3;
  const SimRun noisy = run_sim(traces, c, profile);
  const SimRun again = run_sim(traces, c, profile);
  EXPECT_EQ(files_of(noisy), files_of(again));
  EXPECT_EQ(mean.step_noise, StepNoiseMode::kNone);
  EXPECT_EQ(noisy.step_noise, StepNoiseMode::kReplay);
  EXPECT_EQ(sim_engine_json(noisy)["step_noise"]["mode"], "replay");
  EXPECT_EQ(sim_engine_json(noisy)["step_noise"]["logged_steps"]["prefill"], 300);
  const auto spread = [](const SimRun& r) { return r.summary.itl_ms.p90 / r.summary.itl_ms.p50; };
  EXPECT_GT(spread(noisy), spread(mean) + 0.1)
      << "ITL p50/p90 " << noisy.summary.itl_ms.p50 << "/" << noisy.summary.itl_ms.p90
      << " without noise " << mean.summary.itl_ms.p50 << "/" << mean.summary.itl_ms.p90;
  // The fit is the mean step, so the throughput stays where it was.
  EXPECT_NEAR(noisy.summary.output_tok_s / mean.summary.output_tok_s, 1.0, 0.05);
  // Another seed starts the replay elsewhere.
  c.step_noise_seed = 4;
  EXPECT_NE(files_of(run_sim(traces, c, profile)), files_of(noisy));
}

TEST(SimRun, StepNoiseReplayNeedsAProfileWithStepsInTimeOrder) {
  SimRunConfig c = config(1, 60, 0);
  c.step_noise = StepNoiseMode::kReplay;
  EXPECT_THROW(run_sim(agentx(), c, *h200().profile.cost), Error);
  c.step_noise = StepNoiseMode::kAuto;  // auto: nothing to replay, the means
  EXPECT_EQ(run_sim(agentx(), c, *h200().profile.cost).step_noise, StepNoiseMode::kNone);
}

struct Pair {
  SimRun off, on;
};

Pair delayer_pair(const SimTraces& traces, SimRunConfig c) {
  c.scheduler.delayer.prefill_decode_interval = 0;
  SimRun off = run_sim(traces, c, *h200().profile.cost);
  c.scheduler.delayer.prefill_decode_interval = 16;
  SimRun on = run_sim(traces, c, *h200().profile.cost);
  return {std::move(off), std::move(on)};
}

// Where the sessions' KV fits (contexts scaled to a tenth), the delayer does what the field
// measured: held prefills are coalesced into fewer forwards, decodes are protected, and TTFT pays
// for it. The ITL gain is small in this model: a dense model's prefill of more than a few hundred
// tokens is compute-bound, so a coalesced forward saves only a pass over the weights
// (docs/simulator.md, "The delayer in the simulator").
TEST(SimRun, DelayerTradesTtftForItlWhenTheKvCacheHoldsTheSessions) {
  const Pair p = delayer_pair(traces_scaled(0.1), config(32, 600, 0));
  ASSERT_TRUE(p.on.engine.delayer);
  EXPECT_GT(p.on.engine.delayer->hold, 0);
  EXPECT_GT(p.off.summary.prefix_cache_hit, 0.8);
  EXPECT_LT(p.on.engine.prefill_steps, p.off.engine.prefill_steps);
  EXPECT_GT(p.on.summary.ttft_ms.p50, 2 * p.off.summary.ttft_ms.p50);
  EXPECT_LT(p.on.summary.itl_ms.p50, p.off.summary.itl_ms.p50);
}

// One H200 holds 0.8M tokens of Qwen3-8B KV, less than 16 agentic sessions need. Holding a
// prefill then lets the other sessions evict the prefix it would have hit: the hit rate falls and
// the recomputation costs TTFT on top of the hold.
TEST(SimRun, DelayerCostsPrefixHitsWhenTheKvCacheIsShort) {
  const Pair p = delayer_pair(agentx(), config(16, 600, 0));
  EXPECT_LT(p.on.summary.prefix_cache_hit, 0.8 * p.off.summary.prefix_cache_hit);
  EXPECT_GT(p.on.engine.prefill_tokens, p.off.engine.prefill_tokens);
  EXPECT_GT(p.on.summary.ttft_ms.p50, p.off.summary.ttft_ms.p50);
  // What it still buys: a long prompt's chunks alternate with decode passes, so no decode waits
  // behind all of them at once.
  EXPECT_LT(p.on.summary.itl_ms.p90, p.off.summary.itl_ms.p90);
}

// With nothing else decoding, no pass is ever held: a lone lane runs exactly as without delayer.
TEST(SimRun, DelayerChangesNothingAtConcurrency1) {
  const Pair p = delayer_pair(agentx(), config(1, 600, 0));
  ASSERT_TRUE(p.on.engine.delayer);
  EXPECT_EQ(p.on.engine.delayer->hold, 0);
  std::ostringstream off, on;
  bench::write_records_jsonl(off, p.off.records);
  bench::write_records_jsonl(on, p.on.records);
  EXPECT_EQ(on.str(), off.str());
}

SimRun replicated(const SimTraces& traces, SimRunConfig c, int replicas, RouterKind router) {
  c.replicas = replicas;
  c.router = router;
  c.summary.gpus = replicas;
  return run_sim(traces, c, *h200().profile.cost);
}

// Two replicas on one clock: the same inputs give the same bytes; the replicas' counters add up
// to the run's; each did part of the work; throughput per GPU counts both GPUs.
TEST(SimRun, ReplicasAreDeterministicAndAddUp) {
  const SimRunConfig c = config(8, 300, 0);
  const SimRun a = replicated(agentx(), c, 2, RouterKind::kSession);
  const SimRun b = replicated(agentx(), c, 2, RouterKind::kSession);
  EXPECT_EQ(files_of(a), files_of(b));
  ASSERT_EQ(a.replicas.size(), 2u);
  EXPECT_EQ(a.replicas[0].routed + a.replicas[1].routed, static_cast<int64_t>(a.records.size()));
  EXPECT_GT(a.replicas[0].routed, 0);
  EXPECT_GT(a.replicas[1].routed, 0);
  EXPECT_EQ(a.replicas[0].engine.prefix_cache_hits + a.replicas[1].engine.prefix_cache_hits,
            a.engine.prefix_cache_hits);
  EXPECT_EQ(a.replicas[0].executor.steps + a.replicas[1].executor.steps, a.executor.steps);
  EXPECT_EQ(a.engine.num_kv_blocks, 2 * c.scheduler.num_kv_blocks);
  EXPECT_DOUBLE_EQ(a.summary.total_tok_s_per_gpu, a.summary.total_tok_s / 2);
  const nlohmann::json engine = sim_engine_json(a);
  EXPECT_EQ(engine["router"], "session");
  EXPECT_EQ(engine["replicas"].size(), 2u);
}

// Where each replica's KV holds its sessions (contexts scaled to a tenth), routing by session
// keeps the single engine's prefix hits; round robin sends each turn to the replica that did not
// compute the turn before it, and recomputes what the other one holds.
TEST(SimRun, SessionRoutingKeepsThePrefixHitsRoundRobinLoses) {
  const SimTraces traces = traces_scaled(0.1);
  const SimRunConfig c = config(16, 600, 0);
  const SimRun one = run_sim(traces, c, *h200().profile.cost);
  const SimRun session = replicated(traces, c, 2, RouterKind::kSession);
  const SimRun rr = replicated(traces, c, 2, RouterKind::kRoundRobin);
  const SimRun least = replicated(traces, c, 2, RouterKind::kLeastLoaded);
  EXPECT_GT(session.summary.prefix_cache_hit, one.summary.prefix_cache_hit - 0.02);
  EXPECT_LT(rr.summary.prefix_cache_hit, session.summary.prefix_cache_hit - 0.05);
  EXPECT_LT(least.summary.prefix_cache_hit, session.summary.prefix_cache_hit - 0.05);
  // Measured: 1.77 times the prefill of the session rule.
  EXPECT_GT(rr.engine.prefill_tokens, 3 * session.engine.prefill_tokens / 2);
}

TEST(SimRun, OracleEvictionNeedsOneReplica) {
  SimRunConfig c = config(2, 60, 0);
  c.scheduler.kv_policy = KvPolicy::kOracle;
  c.replicas = 2;
  EXPECT_THROW(run_sim(agentx(), c, *h200().profile.cost), Error);
  c.replicas = 0;
  c.scheduler.kv_policy = KvPolicy::kLru;
  EXPECT_THROW(run_sim(agentx(), c, *h200().profile.cost), Error);
}

}  // namespace
}  // namespace paceline::sim
