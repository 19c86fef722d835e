#include "bench/synthetic_load.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "base/error.h"

namespace paceline::bench {

namespace {

// A standard normal draw (Box-Muller; one of the pair is enough here).
double sample_normal(SplitMix64& rng) {
  double u1 = 1.0 - rng.uniform();  // (0, 1]: log stays finite
  double u2 = rng.uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

// Uniform over the integers [lo, hi].
int64_t uniform_int(SplitMix64& rng, int64_t lo, int64_t hi) {
  return lo + static_cast<int64_t>(rng.below(static_cast<uint64_t>(hi - lo + 1)));
}

void check_length(int64_t len, const char* flag) {
  if (len < 1) fail("{} must be at least 1, got {}", flag, len);
}

}  // namespace

double sample_gamma(SplitMix64& rng, double shape) {
  if (shape < 1.0) {
    // Gamma(a) = Gamma(a + 1) * U^(1/a).
    double u = 1.0 - rng.uniform();
    return sample_gamma(rng, shape + 1.0) * std::pow(u, 1.0 / shape);
  }
  const double d = shape - 1.0 / 3.0;
  const double c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    double x = sample_normal(rng);
    double v = 1.0 + c * x;
    if (v <= 0) continue;
    v = v * v * v;
    double u = 1.0 - rng.uniform();
    if (std::log(u) < 0.5 * x * x + d - d * v + d * std::log(v)) return d * v;
  }
}

std::vector<double> arrival_times_ms(int64_t count, const ArrivalProcess& p) {
  if (!(p.rate > 0)) fail("--request-rate must be positive (or inf), got {}", p.rate);
  if (!(p.burstiness > 0) || !std::isfinite(p.burstiness)) {
    fail("--burstiness must be a positive number, got {}", p.burstiness);
  }
  std::vector<double> times;
  times.reserve(static_cast<size_t>(std::max<int64_t>(count, 0)));
  SplitMix64 rng(mix_keys(p.seed, 0xa441a1ULL));
  const double scale_ms = 1000.0 / (p.rate * p.burstiness);
  double t = 0.0;
  for (int64_t i = 0; i < count; ++i) {
    times.push_back(t);
    if (std::isfinite(p.rate)) t += sample_gamma(rng, p.burstiness) * scale_ms;
  }
  return times;
}

void set_arrival_times(std::vector<MooncakeRecord>& records, const ArrivalProcess& process) {
  std::vector<double> times = arrival_times_ms(static_cast<int64_t>(records.size()), process);
  for (size_t i = 0; i < records.size(); ++i) {
    records[i].timestamp_ms = times[i];
    // Each record is its own request now: the process, not a session chain, says when it goes.
    records[i].session_id.reset();
    records[i].delay_ms.reset();
  }
}

std::vector<MooncakeRecord> random_dataset(const RandomDataset& d) {
  if (d.count < 1) fail("--request-count must be at least 1, got {}", d.count);
  check_length(d.input_len, "--random-input-len");
  check_length(d.output_len, "--random-output-len");
  if (!(d.range_ratio >= 0 && d.range_ratio < 1)) {
    fail("--random-range-ratio must be in [0, 1), got {}", d.range_ratio);
  }
  // The 1e-9 keeps rounding noise from widening the range: 100 * 1.1 is 110.00000000000001,
  // whose ceiling would be 111.
  auto bounds = [&](int64_t len) {
    auto x = static_cast<double>(len);
    return std::pair<int64_t, int64_t>{
        std::max<int64_t>(1, static_cast<int64_t>(std::floor(x * (1 - d.range_ratio) + 1e-9))),
        static_cast<int64_t>(std::ceil(x * (1 + d.range_ratio) - 1e-9))};
  };
  auto [in_lo, in_hi] = bounds(d.input_len);
  auto [out_lo, out_hi] = bounds(d.output_len);
  SplitMix64 rng(mix_keys(d.seed, 0x7a4d0ULL));
  std::vector<MooncakeRecord> records(static_cast<size_t>(d.count));
  for (size_t i = 0; i < records.size(); ++i) {
    MooncakeRecord& r = records[i];
    r.timestamp_ms = 0.0;
    r.input_length = uniform_int(rng, in_lo, in_hi);
    r.output_length = uniform_int(rng, out_lo, out_hi);
    r.line = static_cast<int64_t>(i) + 1;
  }
  return records;
}

}  // namespace paceline::bench
