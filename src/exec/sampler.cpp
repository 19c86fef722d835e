#include "exec/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>
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

// The candidates of one draw in the sampler's order (weight descending, ties: lower index first),
// ordered only as far as a search needs. `head_until` finds the shortest head whose cumulative
// weight satisfies a monotone predicate by partitioning around pivots (a weighted quickselect):
// expected O(n) for any distribution. Sorting instead cost 33 ms per draw on a flat 152k-token
// vocabulary (docs/performance.md), where the drawn rank is anywhere in the order.
class Candidates {
 public:
  explicit Candidates(const std::vector<double>& weights) : weights_(weights) {
    order_.resize(weights.size());
    std::iota(order_.begin(), order_.end(), 0);
  }

  size_t size() const { return order_.size(); }

  // Keeps only the candidates of at least this weight (in index order, as at the start).
  void keep_at_least(double threshold) {
    std::erase_if(order_, [&](int32_t c) { return weights_[c] < threshold; });
  }

  // Keeps only the k heaviest candidates (in no particular order).
  void keep_heaviest(size_t k) {
    if (k >= order_.size()) return;
    std::nth_element(order_.begin(), order_.begin() + static_cast<std::ptrdiff_t>(k), order_.end(),
                     heavier());
    order_.resize(k);
  }

  double total() const {
    double sum = 0.0;
    for (int32_t i : order_) sum += weights_[i];
    return sum;
  }

  // The shortest head, in order, whose cumulative weight c satisfies reached(c) (monotone in c):
  // moves that head to the front and returns its length and weight; {size(), total} when no head
  // does. Afterwards order_[0, length) holds exactly that head, unordered.
  template <typename Reached>
  std::pair<size_t, double> head_until(Reached reached) {
    size_t lo = 0, hi = order_.size();
    double before = 0.0;  // weight of order_[0, lo): the lo heaviest candidates
    while (hi - lo > kSortBelow) {
      // The answer is in [lo, hi), or there is none and hi == size().
      const int32_t pivot = order_[lo + pseudo_random(lo, hi) % (hi - lo)];
      auto first = order_.begin() + static_cast<std::ptrdiff_t>(lo);
      auto last = order_.begin() + static_cast<std::ptrdiff_t>(hi);
      auto mid = std::partition(first, last, [&](int32_t c) { return heavier()(c, pivot); });
      std::iter_swap(mid, std::find(mid, last, pivot));
      double heavy = 0.0;
      for (auto it = first; it != mid; ++it) heavy += weights_[*it];
      const auto m = static_cast<size_t>(mid - order_.begin());
      if (m > lo && reached(before + heavy)) {
        hi = m;
        continue;
      }
      before += heavy + weights_[pivot];
      if (reached(before)) return {m + 1, before};
      lo = m + 1;
    }
    std::sort(order_.begin() + static_cast<std::ptrdiff_t>(lo),
              order_.begin() + static_cast<std::ptrdiff_t>(hi), heavier());
    for (size_t r = lo; r < hi; ++r) {
      before += weights_[order_[r]];
      if (reached(before)) return {r + 1, before};
    }
    return {order_.size(), before};
  }

  void truncate(size_t length) { order_.resize(length); }

  // The lightest candidate left: the last in the sampler's order.
  int32_t lightest() const { return *std::max_element(order_.begin(), order_.end(), heavier()); }

 private:
  static constexpr size_t kSortBelow = 32;

  struct Heavier {
    const std::vector<double>* weights;
    bool operator()(int32_t a, int32_t b) const {
      const double wa = (*weights)[a], wb = (*weights)[b];
      return wa > wb || (wa == wb && a < b);
    }
  };
  Heavier heavier() const { return {&weights_}; }

  static size_t pseudo_random(size_t lo, size_t hi) {
    return static_cast<size_t>(splitmix64((static_cast<uint64_t>(lo) << 32) ^ hi));
  }

  const std::vector<double>& weights_;
  std::vector<int32_t> order_;
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
  Candidates candidates(weights);
  // min_p: weights are probabilities relative to the most likely token's, which weighs 1.
  if (params.min_p > 0.0) candidates.keep_at_least(params.min_p);
  if (params.top_k > 0) candidates.keep_heaviest(static_cast<size_t>(params.top_k));
  double mass = candidates.total();

  // Nucleus: the shortest head of the ordered candidates holding at least top_p of the mass.
  if (params.top_p < 1.0) {
    const double target = params.top_p * mass;
    auto [length, weight] = candidates.head_until([target](double c) { return c >= target; });
    candidates.truncate(length);
    mass = weight;
  }

  // The draw: the first candidate, in order, whose cumulative weight passes u. It is the lightest
  // of the head head_until leaves in front; when rounding leaves u past the end, the last one.
  const double u = sample_uniform(seed, position) * mass;
  candidates.truncate(candidates.head_until([u](double c) { return u < c; }).first);
  return candidates.lightest();
}

}  // namespace paceline
