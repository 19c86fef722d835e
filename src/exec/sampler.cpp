#include "exec/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "base/error.h"

namespace paceline {
namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Candidates in descending weight (ties: lower index first), sorted lazily: most draws only
// look at the head of a 150k-token vocabulary, so the order is extended in doubling prefixes.
class SortedCandidates {
 public:
  explicit SortedCandidates(const std::vector<double>& weights) : weights_(weights) {
    order_.resize(weights.size());
    std::iota(order_.begin(), order_.end(), 0);
  }
  size_t size() const { return order_.size(); }
  int32_t index(size_t rank) {
    if (rank >= sorted_) extend(rank + 1);
    return order_[rank];
  }
  double weight(size_t rank) { return weights_[index(rank)]; }

 private:
  void extend(size_t at_least) {
    size_t target = std::min(order_.size(), std::max<size_t>(at_least, 2 * sorted_ + 64));
    auto heavier = [this](int32_t a, int32_t b) {
      return weights_[a] > weights_[b] || (weights_[a] == weights_[b] && a < b);
    };
    std::partial_sort(order_.begin() + static_cast<std::ptrdiff_t>(sorted_),
                      order_.begin() + static_cast<std::ptrdiff_t>(target), order_.end(), heavier);
    sorted_ = target;
  }

  const std::vector<double>& weights_;
  std::vector<int32_t> order_;
  size_t sorted_ = 0;
};

}  // namespace

int32_t sample_greedy(std::span<const float> logits) {
  if (logits.empty()) fail("sampling from an empty row of logits");
  size_t best = 0;
  for (size_t i = 1; i < logits.size(); ++i) {
    if (logits[i] > logits[best]) best = i;
  }
  return static_cast<int32_t>(best);
}

double sample_uniform(uint64_t seed, int64_t position) {
  uint64_t bits = splitmix64(splitmix64(seed) ^ static_cast<uint64_t>(position));
  return static_cast<double>(bits >> 11) * 0x1.0p-53;
}

int32_t sample_token(std::span<const float> logits, const SamplingParams& params, uint64_t seed,
                     int64_t position) {
  if (params.greedy()) return sample_greedy(logits);

  // Unnormalized probabilities exp((l - max) / T), in double.
  float max_logit = logits[sample_greedy(logits)];
  std::vector<double> weights(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) {
    weights[i] = std::exp((static_cast<double>(logits[i]) - max_logit) / params.temperature);
  }
  SortedCandidates sorted(weights);

  size_t kept = sorted.size();
  if (params.top_k > 0) kept = std::min(kept, static_cast<size_t>(params.top_k));
  double total = 0.0;
  if (kept == sorted.size()) {
    for (double w : weights) total += w;
  } else {
    for (size_t r = 0; r < kept; ++r) total += sorted.weight(r);
  }

  // Nucleus: the shortest head of the sorted candidates holding at least top_p of the mass.
  double mass = total;
  if (params.top_p < 1.0) {
    double target = params.top_p * total;
    double cumulative = 0.0;
    size_t r = 0;
    do {
      cumulative += sorted.weight(r++);
    } while (r < kept && cumulative < target);
    kept = r;
    mass = cumulative;
  }

  double u = sample_uniform(seed, position) * mass;
  double cumulative = 0.0;
  for (size_t r = 0; r < kept; ++r) {
    cumulative += sorted.weight(r);
    if (u < cumulative) return sorted.index(r);
  }
  return sorted.index(kept - 1);  // u landed on rounding error past the last candidate
}

}  // namespace paceline
