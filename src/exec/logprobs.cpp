#include "exec/logprobs.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"

namespace paceline {

double log_sum_exp(std::span<const float> logits) {
  if (logits.empty()) fail("logprobs of an empty row of logits");
  const double max = *std::max_element(logits.begin(), logits.end());
  double sum = 0.0;
  for (float l : logits) sum += std::exp(static_cast<double>(l) - max);
  return max + std::log(sum);
}

std::vector<TokenLogprob> top_logprobs(std::span<const float> logits, double lse, int32_t count) {
  const auto k = static_cast<size_t>(std::clamp<int64_t>(count, 0, static_cast<int64_t>(logits.size())));
  // One pass with a sorted buffer of k: k is at most 20, the row 150k long, so this beats
  // sorting indices (ties keep the lower id, as it is met first and only a larger one displaces).
  std::vector<int32_t> best;
  best.reserve(k + 1);
  for (size_t i = 0; i < logits.size() && k > 0; ++i) {
    const float l = logits[i];
    if (best.size() == k && !(l > logits[static_cast<size_t>(best.back())])) continue;
    auto at = std::find_if(best.begin(), best.end(),
                           [&](int32_t b) { return l > logits[static_cast<size_t>(b)]; });
    best.insert(at, static_cast<int32_t>(i));
    if (best.size() > k) best.pop_back();
  }
  std::vector<TokenLogprob> out;
  out.reserve(best.size());
  for (int32_t id : best) {
    out.push_back({id, static_cast<float>(logits[static_cast<size_t>(id)] - lse)});
  }
  return out;
}

RowLogprobs row_logprobs(std::span<const float> logits, int32_t chosen, int32_t num_top) {
  if (chosen < 0 || static_cast<size_t>(chosen) >= logits.size()) {
    fail("logprobs: token {} is outside the row of {} logits", chosen, logits.size());
  }
  const double lse = log_sum_exp(logits);
  RowLogprobs row;
  row.chosen = {chosen, static_cast<float>(logits[static_cast<size_t>(chosen)] - lse)};
  row.top = top_logprobs(logits, lse, std::min(num_top, kMaxTopLogprobs));
  return row;
}

}  // namespace paceline
