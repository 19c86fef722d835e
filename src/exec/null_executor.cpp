#include "exec/null_executor.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"

namespace paceline {

namespace {

constexpr int64_t kFirstToken = 1000;
constexpr int64_t kLastToken = 2000;  // exclusive

std::vector<int32_t> non_eos_ids(int64_t first, int64_t last, std::span<const int64_t> eos) {
  std::vector<int32_t> ids;
  for (int64_t id = first; id < last; ++id) {
    if (std::find(eos.begin(), eos.end(), id) == eos.end()) ids.push_back(static_cast<int32_t>(id));
  }
  return ids;
}

// A plausible distribution at no cost: the cycle's tokens from the chosen one on hold
// probabilities 1/2, 1/4, 1/8, ... so the chosen token is the most likely and the logprobs
// decrease by ln 2 per rank.
RowLogprobs geometric_logprobs(const std::vector<int32_t>& cycle, size_t first, int32_t num_top) {
  const double ln2 = std::log(2.0);
  RowLogprobs row;
  row.chosen = {cycle[first], static_cast<float>(-ln2)};
  const size_t k = std::min(static_cast<size_t>(std::max(num_top, 0)), cycle.size());
  for (size_t i = 0; i < k; ++i) {
    row.top.push_back(
        {cycle[(first + i) % cycle.size()], static_cast<float>(-ln2 * static_cast<double>(i + 1))});
  }
  return row;
}

}  // namespace

NullExecutor::NullExecutor(KvCacheShape kv_shape, int64_t vocab_size,
                           std::span<const int64_t> eos_token_ids, int64_t num_host_blocks)
    : kv_shape_(kv_shape), num_host_blocks_(num_host_blocks) {
  if (kv_shape.num_blocks < 1 || kv_shape.block_size < 1) {
    fail("null executor: KV cache of {} blocks of {} tokens holds nothing", kv_shape.num_blocks,
         kv_shape.block_size);
  }
  cycle_ = non_eos_ids(kFirstToken, std::min(kLastToken, vocab_size), eos_token_ids);
  if (cycle_.empty()) cycle_ = non_eos_ids(0, vocab_size, eos_token_ids);
  if (cycle_.empty()) fail("null executor: a vocabulary of {} has no non-EOS token", vocab_size);
}

ExecutorCapabilities NullExecutor::capabilities() const {
  ExecutorCapabilities x;
  x.kv = kv_shape_;
  x.kv_dtype = "float32";
  x.kv_element_bytes = sizeof(float);
  x.num_host_kv_blocks = num_host_blocks_;
  x.prompt_logprobs = true;
  x.logprobs_with_logits_processing = true;
  return x;
}

StepResult NullExecutor::execute(const StepPlan& plan) {
  StepResult result;
  result.step_id = plan.step_id;
  result.seqs.reserve(plan.seqs.size());
  const auto n = static_cast<int64_t>(cycle_.size());
  for (const ScheduledSeq& s : plan.seqs) {
    SeqResult& out = result.seqs.emplace_back();
    out.request_id = s.request_id;
    out.tokens.reserve(static_cast<size_t>(s.num_logits));
    const int64_t first_position =
        std::max<int64_t>(0, s.start_pos + static_cast<int64_t>(s.tokens.size()) - s.num_logits);
    for (int32_t i = 0; i < s.num_logits; ++i) {
      const auto at = static_cast<size_t>((first_position + i) % n);
      out.tokens.push_back(cycle_[at]);
      if (s.num_logprobs >= 0) {
        out.logprobs.push_back(geometric_logprobs(cycle_, at, s.num_logprobs));
      }
    }
    // A prompt token scores as the most likely one would.
    for (size_t j = 0; j < s.prompt_logprob_targets.size(); ++j) {
      const auto at = static_cast<size_t>((s.prompt_logprobs_from + static_cast<int64_t>(j)) % n);
      RowLogprobs row = geometric_logprobs(cycle_, at, s.num_logprobs);
      row.chosen.token = s.prompt_logprob_targets[j];
      out.prompt_logprobs.push_back(std::move(row));
    }
  }
  result.step_time_ns = 0;
  return result;
}

}  // namespace paceline
