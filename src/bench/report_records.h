#pragma once
// What the run report plots from records.jsonl: output throughput over time and the per-request
// TTFT and ITL samples, from the successful profiling requests (the same ones the summary's
// metrics use). The file is read line by line and tokens are kept in 10 ms bins, so an hour-long
// run with every chunk recorded does not need its chunks in memory.
#include <string>
#include <utility>
#include <vector>

namespace paceline::bench {

struct ThroughputBucket {
  double start_s = 0;       // since the first profiling request started
  double width_s = 0;       // the bucket's width; the last one may be shorter
  double output_tok_s = 0;  // output tokens that arrived in it, per second
};

struct RecordSeries {
  size_t profiling_ok = 0;
  double profiling_start_s = 0;  // min start_s of the successful profiling requests
  double profiling_end_s = 0;    // max end_s of the same
  double bucket_s = 0;
  std::vector<ThroughputBucket> output_throughput;
  std::vector<double> ttft_ms;  // one per request
  std::vector<double> itl_ms;   // one per request with OSL >= 2
};

// `bucket_s` <= 0 picks 10 s, or 1 s when the profiling window is shorter than a minute. A record
// with chunk times counts each chunk's tokens when it arrived; one without spreads its OSL evenly
// between its first and last token. Fails with the path and line on a line that is not JSON.
RecordSeries read_record_series(const std::string& records_jsonl, double bucket_s = 0);

// An empirical CDF as (value, fraction of requests at or below it), for drawing as steps. Up to
// `max_points` values: every value, after a first point at fraction 0. More: `max_points`
// evenly spaced percentiles (numpy's linear method).
std::vector<std::pair<double, double>> cdf_points(std::vector<double> values,
                                                  size_t max_points = 200);

}  // namespace paceline::bench
