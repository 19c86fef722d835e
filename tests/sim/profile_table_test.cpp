// Measured profiles: the file format round-trips, the fit recovers the costs a table was made
// from, predictions never fall as a step grows, and a fitted model follows a roofline it samples.
#include <gtest/gtest.h>

#include "base/error.h"
#include "model/config.h"
#include "sim/profile_table.h"
#include "sim/roofline_profile.h"

namespace paceline::sim {
namespace {

// A made-up executor: a curved GEMM part plus linear KV, attention and LM-head prices.
double made_up_us(const ProfilePoint& p) {
  const double rows = static_cast<double>(p.tokens);
  return 200 + 40 * std::sqrt(rows) + 3 * rows + 0.01 * static_cast<double>(p.context) +
         2e-5 * static_cast<double>(p.attention) + 25 * static_cast<double>(p.logit_rows);
}

ProfilePoint point(ForwardKind kind, int64_t batch, int64_t tokens_each, int64_t cached) {
  ProfilePoint p;
  p.kind = kind;
  p.batch = batch;
  p.tokens = batch * tokens_each;
  p.context = batch * (cached + tokens_each);
  p.attention = batch * (tokens_each * cached + tokens_each * (tokens_each + 1) / 2);
  p.logit_rows = kind == ForwardKind::kDecode ? p.tokens : batch;
  return p;
}

ProfileTable made_up_table() {
  ProfileTable t;
  t.device = "cpu";
  t.model = "qwen3-tiny";
  t.kv_cache_bytes = 1 << 20;
  for (int64_t tokens : {16, 64, 256, 1024}) {
    for (int64_t batch : {1, 4}) {
      for (int64_t cached : {0, 512, 2048}) {
        t.points.push_back(point(ForwardKind::kPrefill, batch, tokens / batch, cached));
      }
    }
  }
  for (int64_t batch : {1, 4, 16, 64}) {
    for (int64_t context : {128, 1024, 4096}) {
      t.points.push_back(point(ForwardKind::kDecode, batch, 1, context - 1));
    }
  }
  for (ProfilePoint& p : t.points) p.time_us = made_up_us(p);
  return t;
}

TEST(ProfileTable, RoundTripsThroughJson) {
  const ProfileTable t = made_up_table();
  const nlohmann::json j = profile_table_to_json(t);
  EXPECT_EQ(j["type"], "measured");
  const ProfileTable back = profile_table_from_json(j, "test");
  EXPECT_EQ(profile_table_to_json(back), j);
  EXPECT_EQ(back.points.size(), t.points.size());
}

TEST(ProfileTable, RejectsMalformedFiles) {
  nlohmann::json j = profile_table_to_json(made_up_table());
  nlohmann::json no_type = j;
  no_type.erase("type");
  EXPECT_THROW(profile_table_from_json(no_type, "t"), Error);
  nlohmann::json bad_kind = j;
  bad_kind["points"][0]["kind"] = "verify";
  EXPECT_THROW(profile_table_from_json(bad_kind, "t"), Error);
  nlohmann::json bad_time = j;
  bad_time["points"][0]["time_us"] = 0;
  EXPECT_THROW(profile_table_from_json(bad_time, "t"), Error);
  ProfileTable decode_only = made_up_table();
  std::erase_if(decode_only.points,
                [](const ProfilePoint& p) { return p.kind == ForwardKind::kPrefill; });
  EXPECT_THROW(fit_profile_table(decode_only), Error);
}

TEST(ProfileTable, FitReproducesTheMeasuredPoints) {
  const TableFit fit = fit_profile_table(made_up_table());
  EXPECT_LT(fit.prefill.rms_relative_error, 0.01);
  EXPECT_LT(fit.decode.rms_relative_error, 0.01);
  EXPECT_TRUE(fit.mixed.empty());
  // The prefill fit separates the attention price from the GEMM curve.
  EXPECT_NEAR(fit.prefill.per_attention_us, 2e-5, 2e-6);
  EXPECT_GE(fit.prefill.per_context_us, 0);
  EXPECT_GE(fit.prefill.per_logit_row_us, 0);
}

TEST(ProfileTable, FitInterpolatesBetweenGridPoints) {
  const TableCostModel cost(made_up_table());
  for (auto [tokens, cached] : {std::pair<int64_t, int64_t>{100, 300}, {700, 1500}}) {
    const ProfilePoint p = point(ForwardKind::kPrefill, 1, tokens, cached);
    const double predicted = static_cast<double>(cost.step_time_ns(point_work(p))) / 1000;
    EXPECT_NEAR(predicted / made_up_us(p), 1.0, 0.05) << tokens;
  }
  const ProfilePoint d = point(ForwardKind::kDecode, 8, 1, 2000);
  EXPECT_NEAR(static_cast<double>(cost.step_time_ns(point_work(d))) / 1000 / made_up_us(d), 1.0,
              0.05);
}

TEST(ProfileTable, PredictionsAreMonotonicInTokensAndBatch) {
  const TableCostModel cost(made_up_table());
  int64_t prev = 0;
  for (int64_t tokens = 1; tokens <= 8192; tokens *= 2) {  // past the last knot too
    const int64_t t = cost.step_time_ns(point_work(point(ForwardKind::kPrefill, 1, tokens, 256)));
    EXPECT_GT(t, prev) << tokens;
    prev = t;
  }
  prev = 0;
  for (int64_t batch = 1; batch <= 256; batch *= 2) {
    const int64_t t = cost.step_time_ns(point_work(point(ForwardKind::kDecode, batch, 1, 1000)));
    EXPECT_GT(t, prev) << batch;
    prev = t;
  }
}

TEST(ProfileTable, StepsBeyondTheMeasuredRowsAreMarkedAsExtrapolated) {
  const TableCostModel cost(made_up_table());  // decode measured up to batch 64
  EXPECT_FALSE(cost.extrapolates(point_work(point(ForwardKind::kDecode, 64, 1, 1000))));
  EXPECT_TRUE(cost.extrapolates(point_work(point(ForwardKind::kDecode, 65, 1, 1000))));
  EXPECT_FALSE(cost.extrapolates(point_work(point(ForwardKind::kPrefill, 1, 1024, 0))));
  EXPECT_TRUE(cost.extrapolates(point_work(point(ForwardKind::kPrefill, 1, 1025, 0))));
}

TEST(ProfileTable, MixedStepsUseThePrefillFitWithoutMixedPoints) {
  const TableCostModel cost(made_up_table());
  StepWork w = point_work(point(ForwardKind::kPrefill, 4, 64, 512));
  const int64_t as_prefill = cost.step_time_ns(w);
  w.kind = ForwardKind::kMixed;
  EXPECT_EQ(cost.step_time_ns(w), as_prefill);
}

// A table sampled from the H200 roofline, fitted, predicts the roofline off the grid too.
TEST(ProfileTable, FitFollowsASampledRoofline) {
  const RooflineCostModel roof(gpu_spec_named("h200"), model_config_load("qwen3-8b"));
  ProfileTable t;
  t.model = "qwen3-8b";
  for (int64_t tokens : {64, 256, 1024, 4096, 16384}) {
    for (int64_t cached : {0, 8192, 32768}) {
      t.points.push_back(point(ForwardKind::kPrefill, 1, tokens, cached));
    }
  }
  for (int64_t batch : {1, 4, 16, 64, 256}) {
    for (int64_t context : {1024, 16384, 65536}) {
      t.points.push_back(point(ForwardKind::kDecode, batch, 1, context - 1));
    }
  }
  for (ProfilePoint& p : t.points) {
    p.time_us = static_cast<double>(roof.step_time_ns(point_work(p))) / 1000;
  }
  const TableCostModel fitted(t);
  for (const ProfilePoint& p :
       {point(ForwardKind::kPrefill, 1, 2000, 20000), point(ForwardKind::kDecode, 32, 1, 30000),
        point(ForwardKind::kDecode, 8, 1, 100000)}) {
    const auto w = point_work(p);
    EXPECT_NEAR(static_cast<double>(fitted.step_time_ns(w)) / roof.step_time_ns(w), 1.0, 0.1)
        << p.tokens << " " << p.context;
  }
}

}  // namespace
}  // namespace paceline::sim
