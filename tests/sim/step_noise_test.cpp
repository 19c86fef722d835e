// Step-time variation: a step-log profile knows how each logged step's time compared with the fit,
// in the order the server ran them, and the simulator replays those ratios per forward kind from
// a seeded start. Kinds without ratios, and cost models without any (a roofline), keep their mean.
#include "sim/step_noise.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "base/error.h"
#include "sim/profile_table.h"

namespace paceline::sim {
namespace {

// A record of 5 steps of each kind, 10 ms apart: decode ratios 0.8 .. 1.2, prefill 2.0 .. 2.4.
class FakeCost final : public CostModel {
 public:
  FakeCost() {
    for (int i = 0; i < 5; ++i) {
      decode.t_us.push_back(1000 + 10'000.0 * i);
      decode.ratio.push_back(0.8 + 0.1 * i);
      prefill.t_us.push_back(1000 + 10'000.0 * i);
      prefill.ratio.push_back(2.0 + 0.1 * i);
    }
    decode.start_us = prefill.start_us = 1000;
    decode.span_us = prefill.span_us = 50'000;
  }
  int64_t step_time_ns(const StepWork&) const override { return 1000; }
  std::string describe() const override { return "fake"; }
  const StepTimeSeries* step_time_series(ForwardKind kind) const override {
    if (kind == ForwardKind::kDecode && !decode.t_us.empty()) return &decode;
    if (kind == ForwardKind::kPrefill && with_prefill) return &prefill;
    return nullptr;
  }
  StepTimeSeries decode, prefill;
  bool with_prefill = true;
};

constexpr int64_t kMs = 1'000'000;

size_t index_of(const StepTimeSeries& s, double ratio) {
  for (size_t i = 0; i < s.ratio.size(); ++i) {
    if (std::abs(s.ratio[i] - ratio) < 1e-9) return i;
  }
  return s.ratio.size();
}

TEST(StepNoise, ReplaysTheRecordOnTheVirtualClockFromASeededOffsetAndWrapsAround) {
  const FakeCost cost;
  const StepNoise noise(cost, 3);
  ASSERT_TRUE(noise.active());
  EXPECT_EQ(noise.size(ForwardKind::kDecode), 5u);
  EXPECT_GE(noise.offset_us(), 0);
  EXPECT_LT(noise.offset_us(), 50'000);
  // Every 10 ms of virtual time the next logged step's ratio; after 50 ms the record repeats.
  const size_t at = index_of(cost.decode, noise.factor(ForwardKind::kDecode, 0));
  ASSERT_LT(at, 5u);
  for (int i = 1; i <= 7; ++i) {
    EXPECT_DOUBLE_EQ(noise.factor(ForwardKind::kDecode, i * 10 * kMs), cost.decode.ratio[(at + i) % 5])
        << "step " << i;
  }
  // Within a step's stretch of the record the factor holds.
  EXPECT_DOUBLE_EQ(noise.factor(ForwardKind::kDecode, 0), noise.factor(ForwardKind::kDecode, 1));
  // The same seed, the same factors; other seeds start elsewhere on the record.
  EXPECT_DOUBLE_EQ(StepNoise(cost, 3).factor(ForwardKind::kDecode, 0),
                   noise.factor(ForwardKind::kDecode, 0));
  std::set<double> starts;
  for (uint64_t seed = 0; seed < 50; ++seed) {
    starts.insert(StepNoise(cost, seed).factor(ForwardKind::kDecode, 0));
  }
  EXPECT_EQ(starts.size(), 5u);
}

// A slow stretch slowed every kind of step on the server at once: the kinds share one offset.
TEST(StepNoise, EveryKindReadsTheRecordAtTheSameTime) {
  const FakeCost cost;
  for (uint64_t seed = 0; seed < 20; ++seed) {
    const StepNoise noise(cost, seed);
    for (int64_t t : {int64_t{0}, 7 * kMs, 33 * kMs, 120 * kMs}) {
      EXPECT_EQ(index_of(cost.decode, noise.factor(ForwardKind::kDecode, t)),
                index_of(cost.prefill, noise.factor(ForwardKind::kPrefill, t)))
          << "seed " << seed << " at " << t;
    }
  }
}

TEST(StepNoise, KindsWithoutASeriesKeepTheirMeanTime) {
  FakeCost cost;
  cost.with_prefill = false;
  const StepNoise noise(cost, 1);
  EXPECT_DOUBLE_EQ(noise.factor(ForwardKind::kPrefill, 0), 1.0);
  EXPECT_DOUBLE_EQ(noise.factor(ForwardKind::kMixed, 0), 1.0);
  EXPECT_LT(index_of(cost.decode, noise.factor(ForwardKind::kDecode, 0)), 5u);
  cost.decode = {};
  EXPECT_FALSE(StepNoise(cost, 1).active());
  EXPECT_FALSE(StepNoise().active());
  EXPECT_DOUBLE_EQ(StepNoise().factor(ForwardKind::kDecode, 0), 1.0);
}

TEST(StepNoise, ModesAreNamed) {
  EXPECT_EQ(step_noise_mode_from_name("auto"), StepNoiseMode::kAuto);
  EXPECT_EQ(step_noise_mode_from_name("none"), StepNoiseMode::kNone);
  EXPECT_EQ(step_noise_mode_from_name("replay"), StepNoiseMode::kReplay);
  EXPECT_FALSE(step_noise_mode_from_name("random"));
  EXPECT_STREQ(step_noise_mode_name(StepNoiseMode::kReplay), "replay");
}

// A table of single steps in time order: decode steps of 1..16 rows at 1 ms + 50 us per row,
// prefills at 3 ms + 10 us per token, the machine 20% slow in every other block of 100 steps.
ProfileTable drifting_table() {
  ProfileTable t;
  t.device = "cpu";
  t.model = "qwen3-tiny";
  t.points_per_knot = 8;
  t.time_ordered = true;
  double t_us = 0;
  for (int i = 0; i < 1000; ++i) {
    const double drift = (i / 100) % 2 == 0 ? 1.0 : 1.2;
    StepWork w;
    w.num_seqs = 1 + i % 16;
    if (i % 5 == 0) {
      w.kind = ForwardKind::kPrefill;
      w.num_seqs = 1;
      w.tokens = 16 + (i * 37) % 1000;
      w.logit_rows = 1;
      w.context = w.tokens;
      w.attention = w.tokens * (w.tokens + 1) / 2;
      t.points.push_back(work_point(w, (3000 + 10.0 * static_cast<double>(w.tokens)) * drift));
    } else {
      w.kind = ForwardKind::kDecode;
      w.tokens = w.logit_rows = w.num_seqs;
      w.context = w.attention = 100 * w.num_seqs;
      t.points.push_back(work_point(w, (1000 + 50.0 * static_cast<double>(w.tokens)) * drift));
    }
    t.points.back().t_us = t_us;
    t_us += t.points.back().time_us;
  }
  return t;
}

TEST(TableStepTimeSeries, IsEachStepsTimeOverTheFitAtTheTimeItStarted) {
  const ProfileTable table = drifting_table();
  const TableCostModel model(table);
  const StepTimeSeries* decode = model.step_time_series(ForwardKind::kDecode);
  const StepTimeSeries* prefill = model.step_time_series(ForwardKind::kPrefill);
  ASSERT_NE(decode, nullptr);
  ASSERT_NE(prefill, nullptr);
  ASSERT_EQ(decode->ratio.size(), 800u);
  ASSERT_EQ(prefill->ratio.size(), 200u);
  size_t d = 0;
  for (const ProfilePoint& p : table.points) {
    if (p.kind != ForwardKind::kDecode) continue;
    const double predicted = static_cast<double>(model.step_time_ns(point_work(p))) / 1000;
    EXPECT_NEAR(decode->ratio[d], p.time_us / predicted, 1e-3);
    EXPECT_DOUBLE_EQ(decode->t_us[d], p.t_us);
    ++d;
  }
  // The fit sits at the mean, between the fast and the slow stretches: ratios of about 1/1.1 and
  // 1.2/1.1, in stretches as they were measured.
  EXPECT_NEAR(decode->ratio[0], 1.0 / 1.1, 0.03);
  EXPECT_NEAR(decode->ratio[80], 1.2 / 1.1, 0.03);
  // One clock for all kinds: from the first step's start to the last one's end.
  EXPECT_DOUBLE_EQ(decode->start_us, 0);
  EXPECT_DOUBLE_EQ(prefill->span_us, decode->span_us);
  EXPECT_DOUBLE_EQ(decode->span_us, table.points.back().t_us + table.points.back().time_us);
  // A mixed step without a mixed fit is priced and varied like a prefill.
  EXPECT_EQ(model.step_time_series(ForwardKind::kMixed), prefill);
  // A grid of medians is not a record in time: no series.
  ProfileTable grid = table;
  grid.time_ordered = false;
  EXPECT_EQ(TableCostModel(grid).step_time_series(ForwardKind::kDecode), nullptr);
  // The flag and the start times survive the file; a time-ordered file needs them in order.
  nlohmann::json j = profile_table_to_json(table);
  const ProfileTable back = profile_table_from_json(j, "test");
  EXPECT_TRUE(back.time_ordered);
  EXPECT_DOUBLE_EQ(back.points[10].t_us, table.points[10].t_us);
  j["points"][10]["t_us"] = 0.5;
  EXPECT_THROW(profile_table_from_json(j, "test"), Error);
  j["points"][10].erase("t_us");
  EXPECT_THROW(profile_table_from_json(j, "test"), Error);
}

}  // namespace
}  // namespace paceline::sim
