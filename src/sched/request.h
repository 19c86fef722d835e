#pragma once
// One request as the scheduler tracks it: its tokens (prompt, then the output committed so far),
// where it is in its life (waiting, running, preempted, finished), how much of it the KV cache
// holds, and the stop conditions that end it.
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "kv/block_table.h"
#include "sched/logprob.h"
#include "sched/sampling_params.h"

namespace paceline {

enum class RequestStatus { kWaiting, kRunning, kPreempted, kFinished };
enum class FinishReason { kStop, kLength, kAbort };

std::string_view request_status_name(RequestStatus status);  // "waiting", "running", ...
std::string_view finish_reason_name(FinishReason reason);    // "stop", "length", "abort"

struct RequestParams {
  SamplingParams sampling;
  int64_t max_tokens = 16;
  // EOS and stop tokens do not end the request before it has this many output tokens.
  int64_t min_tokens = 0;
  bool ignore_eos = false;
  std::vector<int32_t> eos_token_ids;  // the model's end-of-sequence tokens (the engine fills them)
  std::vector<int32_t> stop_token_ids;
  std::optional<int64_t> arrival_ns;  // unset: the scheduler's clock when it is added
  // -1: none; k in [0, kMaxTopLogprobs]: each output token's logprob and the k highest.
  int32_t logprobs = -1;
  // Also the logprobs of prompt tokens 1.. (completions' echo), with `logprobs` top entries. Such
  // a request skips the prefix cache until they are computed: cached positions have no logits.
  bool prompt_logprobs = false;
};

struct Usage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  int64_t cached_tokens = 0;  // prompt tokens served by the prefix cache
};

// What one step (or a cancel) did to one request: the engine turns it into token events.
struct RequestOutput {
  uint64_t request_id = 0;
  std::vector<int32_t> new_token_ids;
  std::vector<RowLogprobs> new_logprobs;  // one per new token when params.logprobs >= 0
  // With the first output token when params.prompt_logprobs: prompt tokens 1.., in order.
  std::vector<RowLogprobs> prompt_logprobs;
  bool finished = false;
  std::optional<FinishReason> finish_reason;
  std::optional<int32_t> stop_token_id;  // the EOS or stop token that ended it
  Usage usage;
  int64_t arrival_ns = 0;
  int64_t first_scheduled_ns = -1;  // -1: never scheduled (cancelled while waiting)
};

struct Request {
  Request(uint64_t request_id, std::vector<int32_t> prompt, RequestParams request_params,
          int64_t arrival);

  uint64_t id;
  RequestParams params;
  int64_t arrival_ns;
  int64_t num_prompt_tokens;
  std::vector<int32_t> tokens;  // the prompt, then each output token once committed

  RequestStatus status = RequestStatus::kWaiting;
  // Positions [0, num_computed_tokens) hold KV in the cache. A decoding request has all but its
  // last token computed.
  int64_t num_computed_tokens = 0;
  // The current prefill covers tokens [0, prefill_end): set at each admission to every token the
  // request has then (a preempted request recomputes its output too).
  int64_t prefill_end = 0;
  int64_t num_cached_tokens = 0;  // prefix-cache hit at the first admission
  int64_t num_preemptions = 0;
  int64_t first_scheduled_ns = -1;
  std::optional<FinishReason> finish_reason;
  std::optional<int32_t> stop_token_id;
  BlockTable blocks;
  // params.prompt_logprobs: the next prompt token whose logprob is due, and those computed so
  // far (handed out with the first output token).
  int64_t prompt_logprobs_next = 1;
  std::vector<RowLogprobs> prompt_logprobs;

  int64_t num_tokens() const { return static_cast<int64_t>(tokens.size()); }
  int64_t num_output_tokens() const { return num_tokens() - num_prompt_tokens; }
  std::span<const int32_t> prompt() const;
  std::span<const int32_t> output() const;
  bool admitted_before() const { return first_scheduled_ns >= 0; }
  bool in_prefill() const { return num_computed_tokens < prefill_end; }
  bool finished() const { return status == RequestStatus::kFinished; }
  bool wants_prompt_logprobs() const {
    return params.prompt_logprobs && prompt_logprobs_next < num_prompt_tokens;
  }
  int64_t remaining_output_tokens() const { return params.max_tokens - num_output_tokens(); }

  // Commits one sampled token and applies the stop conditions in vLLM's order: EOS (unless
  // ignore_eos), then stop token ids, both only once min_tokens are out; then max_tokens. True
  // when the token finished the request (status is then kFinished, with the reason).
  bool append_output(int32_t token);
  Usage usage() const;
  RequestOutput make_output() const;  // id, usage, times and finish state; no tokens
};

}  // namespace paceline
