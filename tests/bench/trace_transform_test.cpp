// Trace transforms for small hardware: scaled lengths, scaled prefix blocks that keep sharing in
// proportion, and --max-isl cutting sessions and dropping records.
#include <gtest/gtest.h>

#include <numeric>
#include <set>

#include "base/error.h"
#include "bench/trace_transform.h"
#include "bundled_traces.h"

namespace paceline::bench {
namespace {

std::vector<int64_t> iota_ids(int64_t first, int64_t n) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), first);
  return v;
}

// Leading blocks two id lists share.
size_t shared_prefix(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  size_t k = 0;
  while (k < a.size() && k < b.size() && a[k] == b[k]) ++k;
  return k;
}

TEST(TraceTransform, ScaleLength) {
  EXPECT_EQ(scale_length(100000, 0.002), 200);
  EXPECT_EQ(scale_length(3, 0.01), 1);  // never 0
  EXPECT_EQ(scale_length(0, 0.5), 0);   // a recorded 0 stays 0
  EXPECT_EQ(scale_length(10, 2.0), 20);
}

TEST(TraceTransform, ScaledBlocksKeepTheSharedFraction) {
  // Two requests share their first 600 of 1000 recorded blocks.
  std::vector<int64_t> a = iota_ids(0, 1000);
  std::vector<int64_t> b = iota_ids(0, 600);
  auto tail = iota_ids(5000, 400);
  b.insert(b.end(), tail.begin(), tail.end());
  const double f = 0.02;
  const int64_t isl = scale_length(1000 * 64, f);
  auto sa = scale_hash_ids(a, 64, isl, f);
  auto sb = scale_hash_ids(b, 64, isl, f);
  EXPECT_EQ(sa.size(), 20u);                     // 1280 tokens = 20 blocks of 64
  EXPECT_EQ(shared_prefix(sa, sb), 12u);         // 600 / 1000 of 20
  EXPECT_EQ(sa, scale_hash_ids(a, 64, isl, f));  // deterministic
  // A prefix of the request scales to a prefix of its scaled ids.
  auto half = scale_hash_ids(iota_ids(0, 500), 64, scale_length(500 * 64, f), f);
  EXPECT_EQ(shared_prefix(sa, half), half.size());
}

TEST(TraceTransform, ScalingUpSplitsBlocks) {
  auto s = scale_hash_ids({7, 8}, 64, 4 * 64, 2.0);
  ASSERT_EQ(s.size(), 4u);
  EXPECT_EQ(std::set<int64_t>(s.begin(), s.end()).size(), 4u);
  auto t = scale_hash_ids({7, 9}, 64, 4 * 64, 2.0);
  EXPECT_EQ(shared_prefix(s, t), 2u);
}

TEST(TraceTransform, PartialBlocksAreLeftOut) {
  // 3 recorded blocks scaled by 0.5 cover 1.5 scaled blocks: only the full one gets an id.
  EXPECT_EQ(scale_hash_ids({1, 2, 3}, 64, 96, 0.5).size(), 1u);
}

TEST(TraceTransform, SessionsAreScaledAndCut) {
  const auto& sessions = test_util::bundled_agentx_sessions();
  TraceTransform t;
  t.isl_scale = 0.01;
  t.osl_scale = 0.1;
  TransformStats stats;
  auto scaled = transform_sessions(sessions, t, &stats);
  ASSERT_EQ(scaled.size(), sessions.size());
  EXPECT_EQ(stats.requests_in, stats.requests_kept);
  const auto& r0 = sessions[0].requests[0];
  const auto& s0 = scaled[0].requests[0];
  EXPECT_EQ(s0.in, scale_length(r0.in, 0.01));
  EXPECT_EQ(s0.out, scale_length(r0.out, 0.1));
  EXPECT_LE(static_cast<int64_t>(s0.hash_ids.size()) * 64, s0.in);
  EXPECT_EQ(s0.t, r0.t);  // times are untouched

  TraceTransform cut;
  cut.max_isl = 60000;
  auto kept = transform_sessions(sessions, cut, &stats);
  EXPECT_LT(stats.requests_kept, stats.requests_in);
  EXPECT_EQ(stats.sessions_in, static_cast<int64_t>(sessions.size()));
  EXPECT_EQ(stats.sessions_kept, static_cast<int64_t>(kept.size()));
  EXPECT_GT(stats.sessions_cut, 0);
  for (const auto& s : kept) {
    ASSERT_FALSE(s.requests.empty());
    for (const auto& r : s.requests) EXPECT_LE(r.in, 60000);
    const AgentxSession* original = nullptr;
    for (const auto& o : sessions) {
      if (o.id == s.id) original = &o;
    }
    ASSERT_NE(original, nullptr);
    const bool was_cut = s.requests.size() < original->requests.size();
    if (was_cut) {
      EXPECT_GT(original->requests[s.requests.size()].in, 60000);
    }
    for (const auto& sub : s.subagents) {
      EXPECT_FALSE(sub.requests.empty());
      if (was_cut) {
        EXPECT_LT(sub.start_s(), original->requests[s.requests.size()].t);
      }
      for (const auto& r : sub.requests) EXPECT_LE(r.in, 60000);
    }
  }
  TraceTransform none;
  none.max_isl = 1;
  EXPECT_THROW(transform_sessions(sessions, none), Error);
}

TEST(TraceTransform, RecordsAreDroppedOneByOne) {
  std::vector<MooncakeRecord> records(3);
  records[0].input_length = 1000;
  records[0].hash_ids = {1, 2};
  records[1].input_length = 5000;
  records[1].hash_ids = iota_ids(1, 10);
  records[2].input_length = 600;
  records[2].output_length = 40;
  records[2].hash_ids = {1, 2};
  TraceTransform t;
  t.max_isl = 2000;
  t.osl_scale = 0.5;
  TransformStats stats;
  auto out = transform_records(records, t, 512, &stats);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].input_length, 600);
  EXPECT_EQ(out[1].output_length, 20);
  EXPECT_EQ(out[1].hash_ids, records[2].hash_ids);  // no isl scale: ids untouched
  EXPECT_EQ(stats.requests_in, 3);
  EXPECT_EQ(stats.requests_kept, 2);
}

TEST(TraceTransform, Description) {
  TraceTransform t;
  EXPECT_EQ(describe_transform(t), "none");
  t.isl_scale = 0.002;
  t.osl_scale = 0.02;
  t.max_isl = 4096;
  EXPECT_EQ(describe_transform(t), "isl x0.002, osl x0.02, max isl 4096");
  auto j = transform_json(t, {});
  EXPECT_TRUE(j["scaled"].get<bool>());
  EXPECT_EQ(j["max_isl"], 4096);
}

}  // namespace
}  // namespace paceline::bench
