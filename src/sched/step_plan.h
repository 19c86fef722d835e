#pragma once
// What one forward computes: the scheduler's output and the executor's whole input.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "kv/kv_manager.h"
#include "sched/logprob.h"
#include "sched/sampling_params.h"

namespace paceline {

enum class ForwardKind { kPrefill, kDecode, kMixed };
inline constexpr size_t kNumForwardKinds = 3;
// 0, 1, 2: for tables with one entry per kind.
constexpr size_t forward_kind_index(ForwardKind kind) { return static_cast<size_t>(kind); }

// "prefill", "decode", "mixed": the names logs, profiles and metrics use.
const char* forward_kind_name(ForwardKind kind);
// The kind of such a name; nullopt for anything else.
std::optional<ForwardKind> forward_kind_from_name(std::string_view name);

struct ScheduledSeq {
  uint64_t request_id = 0;
  // Tokens computed this step: a prefill chunk, one decode token, or k+1 verify tokens.
  std::vector<int32_t> tokens;
  // Position of tokens[0]; positions [0, start_pos) are already in the KV cache.
  int64_t start_pos = 0;
  // Physical KV block ids covering positions [0, start_pos + tokens.size()). A view of the
  // scheduler's own table, valid until the scheduler's next call (update, cancel, schedule): a
  // copy cost 25 KB per row at 100k tokens, most of a step's scheduling time
  // (docs/performance.md). An executor that keeps it longer copies it.
  std::span<const int32_t> block_table;
  // Logits wanted for the last num_logits tokens: 0 for a middle prefill chunk, 1 for the last
  // chunk or a decode, k+1 for a speculative verify.
  int32_t num_logits = 1;
  SamplingParams sampling;
  uint64_t seed = 0;  // effective sampling seed of the request
  // For penalties (sampling.has_penalties()), else empty: every token the request has committed,
  // the prompt then the output, and where the output starts. A view of the request's own tokens
  // with block_table's lifetime, so that a long context is not copied every step.
  std::span<const int32_t> history;
  int64_t num_prompt_tokens = 0;
  // -1: no logprobs; k >= 0: each logit row's sampled-token logprob and its k highest
  // (SeqResult::logprobs). Only rows that ask pay for the log-softmax.
  int32_t num_logprobs = -1;
  // Prompt logprobs (echo): the logits of chunk positions prompt_logprobs_from, from + 1, ...
  // scored at the prompt tokens that follow them (targets), into SeqResult::prompt_logprobs,
  // with num_logprobs top entries. -1: none this step.
  int64_t prompt_logprobs_from = -1;
  std::vector<int32_t> prompt_logprob_targets;
};

struct StepPlan {
  uint64_t step_id = 0;
  ForwardKind kind = ForwardKind::kPrefill;
  std::vector<ScheduledSeq> seqs;
  // Decode plans: the CUDA-graph batch size this step replays (smallest captured size >= the
  // batch), or 0 for eager execution above the largest captured size.
  int32_t padded_batch_size = 0;
  // Copies between the GPU's KV blocks and the host tier's, made before the forward computes:
  // stores first (blocks giving way), then loads (prefixes coming back).
  KvTransfers kv_transfers;

  int64_t num_tokens() const {
    int64_t n = 0;
    for (const auto& s : seqs) n += static_cast<int64_t>(s.tokens.size());
    return n;
  }
};

struct SeqResult {
  uint64_t request_id = 0;
  // One sampled token per requested logit row, in position order.
  std::vector<int32_t> tokens;
  // One per sampled token when the row asked (num_logprobs >= 0), else empty.
  std::vector<RowLogprobs> logprobs = {};
  // One per prompt_logprob_targets entry, in order; empty when the row asked none.
  std::vector<RowLogprobs> prompt_logprobs = {};
};

struct StepResult {
  uint64_t step_id = 0;
  std::vector<SeqResult> seqs;  // same order as StepPlan::seqs
  int64_t step_time_ns = 0;     // measured, or predicted by the simulator
  // Loads of the plan's kv_transfers that did not land (a failed copy). When there is any, the
  // executor ran no forward: every row is there without tokens, and the scheduler plans the
  // step again without the KV that is missing (Scheduler::update).
  std::vector<BlockCopy> failed_loads = {};
  // FP8 KV cache: K/V values this step's store clamped to e4m3's +-448 (beyond it, or NaN).
  int64_t kv_fp8_clamped = 0;
};

}  // namespace paceline
