// The roofline cost model: the features a plan reduces to, the H200 figures for Qwen3-8B, and the
// shape of its predictions (more work never takes less time; graphs save launch time).
#include <gtest/gtest.h>

#include "base/error.h"
#include "model/config.h"
#include "sim/cost_model.h"
#include "sim/roofline_profile.h"

namespace paceline::sim {
namespace {

StepPlan plan_of(ForwardKind kind, std::vector<std::pair<int64_t, int64_t>> rows,
                 int32_t padded = 0) {
  StepPlan plan;
  plan.kind = kind;
  for (auto [start, n] : rows) {
    ScheduledSeq& s = plan.seqs.emplace_back();
    s.start_pos = start;
    s.tokens.assign(static_cast<size_t>(n), 7);
    s.num_logits = kind == ForwardKind::kDecode ? static_cast<int32_t>(n) : 1;
  }
  plan.padded_batch_size = padded;
  return plan;
}

StepWork decode(int64_t batch, int64_t context, int64_t graph = 0) {
  StepWork w;
  w.kind = ForwardKind::kDecode;
  w.num_seqs = w.tokens = w.logit_rows = batch;
  w.context = w.attention = batch * context;
  w.graph_batch = graph > 0 ? graph : 0;
  w.padding_rows = graph > batch ? graph - batch : 0;
  return w;
}

StepWork prefill(int64_t tokens, int64_t prefix) {
  StepWork w;
  w.kind = ForwardKind::kPrefill;
  w.num_seqs = w.logit_rows = 1;
  w.tokens = tokens;
  w.context = prefix + tokens;
  w.attention = tokens * prefix + tokens * (tokens + 1) / 2;
  return w;
}

RooflineCostModel h200_qwen3_8b() {
  return RooflineCostModel(gpu_spec_named("h200"), model_config_load("qwen3-8b"));
}

TEST(StepWork, CountsTokensContextAndCausalPairs) {
  StepWork w = step_work(plan_of(ForwardKind::kPrefill, {{0, 4}, {10, 2}}));
  EXPECT_EQ(w.num_seqs, 2);
  EXPECT_EQ(w.tokens, 6);
  EXPECT_EQ(w.context, 4 + 12);
  EXPECT_EQ(w.attention, (1 + 2 + 3 + 4) + (11 + 12));
  EXPECT_EQ(w.logit_rows, 2);
  EXPECT_EQ(w.graph_batch, 0);
}

TEST(StepWork, GraphDecodePadsRowsButNotLogits) {
  StepWork w = step_work(plan_of(ForwardKind::kDecode, {{99, 1}, {49, 1}, {9, 1}}, 4));
  EXPECT_EQ(w.graph_batch, 4);
  EXPECT_EQ(w.padding_rows, 1);
  EXPECT_EQ(w.logit_rows, 3);
  EXPECT_EQ(w.context, 100 + 50 + 10);
  EXPECT_EQ(w.attention, w.context);
}

TEST(Roofline, Qwen3_8bDecodeBatchOneIsTheWeightsOverTheBandwidth) {
  const ModelConfig m = model_config_load("qwen3-8b");
  const GpuSpec g = gpu_spec_named("h200");
  EXPECT_DOUBLE_EQ(g.bandwidth(), 0.8 * 4.275e12);
  // All of the weights but the input embedding table: about 15.1 GB of the 16.4 GB.
  const double weights = static_cast<double>(weight_bytes_read(m, 2));
  EXPECT_NEAR(weights, 2.0 * (m.num_parameters() - m.vocab_size * m.hidden_size), 1);
  EXPECT_NEAR(static_cast<double>(m.num_parameters()) * 2 / 1e9, 16.4, 0.05);

  const RooflineCostModel cost = h200_qwen3_8b();
  const auto p = cost.parts(decode(1, 1024, 1));
  EXPECT_NEAR(p.linear_s, weights / g.bandwidth(), 1e-9);  // memory-bound at batch 1
  EXPECT_NEAR(p.overhead_s, g.step_overhead_us * 1e-6, 1e-12);
  // KV of 1,024 positions: 1,024 * 147,456 bytes read at the same bandwidth.
  EXPECT_NEAR(p.attention_s, 1025.0 * 147456 / g.bandwidth(), 1e-9);
  // The figure: 16.4 GB / (0.8 * 4.275 TB/s) plus the overhead, within 10%.
  const double expected = 16.4e9 / g.bandwidth() + g.step_overhead_us * 1e-6;
  EXPECT_NEAR(p.total_s, expected, 0.1 * expected);
  EXPECT_GT(p.total_s, 4.4e-3);
  EXPECT_LT(p.total_s, 5.5e-3);  // between the copy floor (3.8 ms) and gpt-fast's 5.52 ms
}

TEST(Roofline, Qwen3_8bPrefillOf8kIsComputeBound) {
  const RooflineCostModel cost = h200_qwen3_8b();
  const auto p = cost.parts(prefill(8192, 0));
  // ../shared/guide/gpu.md: about 154 TFLOP, 0.18 s at the cuBLAS rate; llama.cpp takes 0.44 s.
  EXPECT_GT(p.total_s, 0.18);
  EXPECT_LT(p.total_s, 0.44);
}

TEST(Roofline, KvCapacityIsMemoryTimesUtilizationMinusWeights) {
  const ModelConfig m = model_config_load("qwen3-8b");
  const GpuSpec g = gpu_spec_named("h200");
  const int64_t kv = roofline_kv_cache_bytes(g, m, 0.9);
  EXPECT_NEAR(static_cast<double>(kv), 143771.0 * 1048576 * 0.9 - m.num_parameters() * 2.0, 1);
  EXPECT_THROW(roofline_kv_cache_bytes(g, m, 0.05), Error);
  EXPECT_THROW(roofline_kv_cache_bytes(g, m, 1.5), Error);
}

TEST(Roofline, MonotonicInTokensBatchAndContext) {
  const RooflineCostModel cost = h200_qwen3_8b();
  int64_t prev = 0;
  for (int64_t tokens : {1, 16, 128, 512, 2048, 8192, 16384}) {
    const int64_t t = cost.step_time_ns(prefill(tokens, 4096));
    EXPECT_GT(t, prev) << tokens;
    prev = t;
  }
  prev = 0;
  for (int64_t batch : {1, 2, 8, 32, 64, 128, 256, 512}) {
    const int64_t t = cost.step_time_ns(decode(batch, 8192));
    EXPECT_GE(t, prev) << batch;
    prev = t;
  }
  EXPECT_LT(cost.step_time_ns(decode(8, 1000)), cost.step_time_ns(decode(8, 100000)));
  EXPECT_LT(cost.step_time_ns(prefill(1024, 0)), cost.step_time_ns(prefill(1024, 100000)));
}

TEST(Roofline, AGraphSavesTheLaunchesOfAnEagerStep) {
  const RooflineCostModel cost = h200_qwen3_8b();
  const GpuSpec& g = cost.gpu();
  const auto graph = cost.parts(decode(4, 512, 4));
  const auto eager = cost.parts(decode(4, 512));
  const double launches = g.eager_launch_us_per_layer * 1e-6 * 36;
  EXPECT_NEAR(eager.total_s - g.step_overhead_us * 1e-6,
              std::max(launches, graph.linear_s + graph.attention_s), 1e-9);
  EXPECT_GE(eager.total_s, graph.total_s);
  // Padding rows cost compute: a batch of 3 padded to 256 is no cheaper than 3 padded to 4.
  EXPECT_GE(cost.step_time_ns(decode(3, 512, 256)), cost.step_time_ns(decode(3, 512, 4)));
}

TEST(Roofline, GpuSpecRoundTripsThroughJson) {
  const GpuSpec g = gpu_spec_named("h200");
  const GpuSpec back = gpu_spec_from_json(gpu_spec_to_json(g), "test");
  EXPECT_EQ(gpu_spec_to_json(back), gpu_spec_to_json(g));
  nlohmann::json bad = gpu_spec_to_json(g);
  bad["bandwidth_fraction"] = 1.5;
  EXPECT_THROW(gpu_spec_from_json(bad, "test"), Error);
  EXPECT_THROW(gpu_spec_named("a100"), Error);
}

}  // namespace
}  // namespace paceline::sim
