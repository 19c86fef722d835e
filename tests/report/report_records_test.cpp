// What the run report plots, from records.jsonl: output tokens per time bucket (chunk times when
// recorded, else spread between first and last token), TTFT and ITL per request, profiling
// successes only.
#include <gtest/gtest.h>

#include "bench/report_records.h"
#include "fake_runs.h"

namespace paceline::bench {
namespace {

using namespace test_util;

fs::path write_records(const std::vector<RequestRecord>& records, bool with_chunks) {
  fs::path dir = fresh_dir(with_chunks ? "chunks" : "nochunks");
  std::ofstream out(dir / "records.jsonl");
  write_records_jsonl(out, records, with_chunks);
  return dir / "records.jsonl";
}

TEST(RecordSeries, ChunksLandInTheirBuckets) {
  // Chunks at 0.55, 0.65, ..., 1.45 s: five in [0, 1), five in [1, 1.45].
  RequestRecord ok = fake_record(0, 0.0, 0.55, 0.1, 10);
  RequestRecord warmup = fake_record(1, 0.0, 0.1, 0.1, 5);
  warmup.phase = Phase::kWarmup;
  RequestRecord failed = fake_record(2, 0.1, 0.1, 0.1, 5);
  failed.status = RecordStatus::kError;
  RecordSeries s = read_record_series(write_records({warmup, ok, failed}, true).string());
  EXPECT_EQ(s.profiling_ok, 1u);
  EXPECT_DOUBLE_EQ(s.profiling_start_s, 0.0);
  EXPECT_DOUBLE_EQ(s.profiling_end_s, 1.45);
  EXPECT_DOUBLE_EQ(s.bucket_s, 1.0);  // a window under a minute gets 1 s buckets
  ASSERT_EQ(s.output_throughput.size(), 2u);
  EXPECT_NEAR(s.output_throughput[0].output_tok_s, 5.0, 1e-9);
  EXPECT_NEAR(s.output_throughput[1].width_s, 0.45, 1e-9);
  EXPECT_NEAR(s.output_throughput[1].output_tok_s, 5.0 / 0.45, 1e-9);
  ASSERT_EQ(s.ttft_ms.size(), 1u);
  EXPECT_NEAR(s.ttft_ms[0], 550.0, 1e-6);
  ASSERT_EQ(s.itl_ms.size(), 1u);
  EXPECT_NEAR(s.itl_ms[0], 100.0, 1e-6);
}

TEST(RecordSeries, WithoutChunksTokensAreSpreadBetweenFirstAndLast) {
  // First token 0.5 s, last 1.5 s, 11 tokens: 5.5 fall in [0, 1) and 5.5 in [1, 1.5].
  RecordSeries s =
      read_record_series(write_records({fake_record(0, 0, 0.5, 0.1, 11)}, false).string());
  ASSERT_EQ(s.output_throughput.size(), 2u);
  EXPECT_NEAR(s.output_throughput[0].output_tok_s, 5.5, 1e-6);
  EXPECT_NEAR(s.output_throughput[1].output_tok_s, 5.5 / 0.5, 1e-6);
}

TEST(RecordSeries, LongRunsGetTenSecondBucketsFromTheFirstProfilingStart) {
  std::vector<RequestRecord> records;
  for (int i = 0; i < 10; ++i) records.push_back(fake_record(i, 5.0 + 10.0 * i, 1.0, 0.5, 3));
  RecordSeries s = read_record_series(write_records(records, true).string());
  EXPECT_DOUBLE_EQ(s.bucket_s, 10.0);
  EXPECT_DOUBLE_EQ(s.profiling_start_s, 5.0);
  ASSERT_EQ(s.output_throughput.size(), 10u);  // 5 s to 97 s
  for (int i = 0; i < 9; ++i) EXPECT_NEAR(s.output_throughput[i].output_tok_s, 0.3, 1e-9) << i;
}

TEST(RecordSeries, EmptyFileGivesNoPoints) {
  RecordSeries s = read_record_series(write_records({}, true).string());
  EXPECT_EQ(s.profiling_ok, 0u);
  EXPECT_TRUE(s.output_throughput.empty());
  EXPECT_TRUE(s.ttft_ms.empty());
}

TEST(CdfPoints, EveryValueAsAStepUpToTheLimit) {
  using P = std::pair<double, double>;
  EXPECT_EQ(cdf_points({40, 10, 30, 20, 50}),
            (std::vector<P>{{10, 0}, {10, 0.2}, {20, 0.4}, {30, 0.6}, {40, 0.8}, {50, 1}}));
  EXPECT_TRUE(cdf_points({}).empty());
}

TEST(CdfPoints, PercentilesBeyondTheLimit) {
  using P = std::pair<double, double>;
  EXPECT_EQ(cdf_points({40, 10, 30, 20, 50}, 3), (std::vector<P>{{10, 0}, {30, 0.5}, {50, 1}}));
  std::vector<double> many(1000);
  for (size_t i = 0; i < many.size(); ++i) many[i] = static_cast<double>(i);
  auto pts = cdf_points(many, 200);
  ASSERT_EQ(pts.size(), 200u);
  EXPECT_DOUBLE_EQ(pts.front().first, 0);
  EXPECT_DOUBLE_EQ(pts.back().first, 999);
}

}  // namespace
}  // namespace paceline::bench
