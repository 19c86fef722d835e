#pragma once
// The load `vllm bench serve` and AIPerf generate themselves, for runs that must be comparable
// with theirs: an arrival process (--request-rate, --burstiness) and a dataset of random-length
// requests (--dataset random). Both produce open-loop records for the ArrivalReplayer.
//
// Arrivals: the first request goes at once; each gap after it is drawn from a gamma distribution
// with shape B (the burstiness) and scale 1/(R*B), so the mean gap is 1/R whatever B is and the
// coefficient of variation of the gaps is 1/sqrt(B). B = 1 is a Poisson process; B < 1 is
// burstier, B > 1 more regular. An infinite rate sends every request at once. These are vLLM's
// definitions (vllm/benchmarks/serve.py).
//
// Random dataset: input lengths uniform over the integers [floor(L*(1-r)), ceil(L*(1+r))] for
// --random-input-len L and --random-range-ratio r (output lengths likewise, at least 1), as vLLM's
// RandomDataset draws them. The records carry no prefix-block ids, so every prompt is unique.
// Draws come from SplitMix64, so one seed gives the same run on every platform.
#include <cstdint>
#include <limits>
#include <vector>

#include "bench/mooncake_trace.h"
#include "bench/rng.h"

namespace paceline::bench {

struct ArrivalProcess {
  double rate = std::numeric_limits<double>::infinity();  // requests per second
  double burstiness = 1.0;                                // gamma shape
  uint64_t seed = 0;
};

// One gamma(shape, scale 1) draw (Marsaglia and Tsang's method; shape < 1 by boosting).
double sample_gamma(SplitMix64& rng, double shape);

// Send times in ms after the run starts, one per request, the first at 0. Fails naming the flag
// when the rate or the burstiness is not positive.
std::vector<double> arrival_times_ms(int64_t count, const ArrivalProcess& process);

// Replaces every record's arrival time (and any session delay) with the process's.
void set_arrival_times(std::vector<MooncakeRecord>& records, const ArrivalProcess& process);

struct RandomDataset {
  int64_t count = 1000;  // vLLM's default --num-prompts
  int64_t input_len = 1024;
  int64_t output_len = 128;
  double range_ratio = 0.0;  // in [0, 1)
  uint64_t seed = 0;
};

// `count` records, every one at time 0 (set_arrival_times spaces them). Fails naming the flag on a
// length below 1 or a ratio outside [0, 1).
std::vector<MooncakeRecord> random_dataset(const RandomDataset& dataset);

}  // namespace paceline::bench
