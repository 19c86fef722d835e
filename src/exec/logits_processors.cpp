#include "exec/logits_processors.h"

#include <algorithm>
#include <vector>

#include "base/error.h"
#include "exec/sampler.h"

namespace paceline {

void append_logit_adjustments(const SamplingParams& params, std::span<const int32_t> history,
                              int64_t num_prompt_tokens, int64_t vocab, int32_t row,
                              std::vector<LogitAdjustment>& out) {
  if (!params.adjusts_logits()) return;
  // A token's entry, found through a vocabulary-sized table of indices kept by each thread and
  // reset entry by entry afterwards: one pass over the history instead of a sort of it.
  thread_local std::vector<int32_t> slot;
  thread_local std::vector<int32_t> counts;
  if (static_cast<int64_t>(slot.size()) < vocab) slot.assign(static_cast<size_t>(vocab), -1);
  const size_t first = out.size();
  counts.clear();
  auto entry = [&](int32_t token) -> size_t {
    if (token < 0 || token >= vocab) {
      for (size_t i = first; i < out.size(); ++i) slot[static_cast<size_t>(out[i].token)] = -1;
      out.resize(first);
      fail("logits processing: token {} is outside the vocabulary of {}", token, vocab);
    }
    int32_t& s = slot[static_cast<size_t>(token)];
    if (s < 0) {
      s = static_cast<int32_t>(out.size() - first);
      LogitAdjustment& a = out.emplace_back();
      a.row = row;
      a.token = token;
      counts.push_back(0);
    }
    return static_cast<size_t>(s);
  };

  if (params.logit_bias) {
    for (const TokenBias& b : *params.logit_bias) out[first + entry(b.token)].bias = b.bias;
  }
  if (params.has_penalties()) {
    const auto repetition = static_cast<float>(params.repetition_penalty);
    const size_t prompt =
        std::min(history.size(), static_cast<size_t>(std::max<int64_t>(0, num_prompt_tokens)));
    if (repetition != 1.0f) {
      for (size_t i = 0; i < prompt; ++i) out[first + entry(history[i])].repetition = repetition;
    }
    for (size_t i = prompt; i < history.size(); ++i) {
      const size_t e = entry(history[i]);
      out[first + e].repetition = repetition;
      ++counts[e];
    }
    for (size_t e = 0; e < counts.size(); ++e) {
      if (counts[e] == 0) continue;
      out[first + e].offset =
          static_cast<float>(params.frequency_penalty * counts[e] + params.presence_penalty);
    }
  }
  for (size_t i = first; i < out.size(); ++i) slot[static_cast<size_t>(out[i].token)] = -1;
}

void apply_logit_adjustments(std::span<float> logits,
                             std::span<const LogitAdjustment> adjustments) {
  for (const LogitAdjustment& a : adjustments) {
    if (a.token < 0 || static_cast<size_t>(a.token) >= logits.size()) {
      fail("logits processing: token {} is outside a row of {} logits", a.token, logits.size());
    }
    float& l = logits[static_cast<size_t>(a.token)];
    l = adjusted_logit(l, a);
  }
}

int32_t sample_processed(std::span<const float> logits, const ScheduledSeq& seq, int64_t position) {
  if (!seq.sampling.adjusts_logits()) return sample_token(logits, seq.sampling, seq.seed, position);
  std::vector<LogitAdjustment> adjustments;
  append_logit_adjustments(seq.sampling, seq.history, seq.num_prompt_tokens,
                           static_cast<int64_t>(logits.size()), 0, adjustments);
  std::vector<float> row(logits.begin(), logits.end());
  apply_logit_adjustments(row, adjustments);
  return sample_token(row, seq.sampling, seq.seed, position);
}

}  // namespace paceline
