#include "sched/request.h"

#include <algorithm>

namespace paceline {

std::string_view request_status_name(RequestStatus status) {
  switch (status) {
    case RequestStatus::kWaiting:
      return "waiting";
    case RequestStatus::kRunning:
      return "running";
    case RequestStatus::kPreempted:
      return "preempted";
    case RequestStatus::kFinished:
      return "finished";
  }
  return "unknown";
}

std::string_view finish_reason_name(FinishReason reason) {
  switch (reason) {
    case FinishReason::kStop:
      return "stop";
    case FinishReason::kLength:
      return "length";
    case FinishReason::kAbort:
      return "abort";
  }
  return "unknown";
}

Request::Request(uint64_t request_id, std::vector<int32_t> prompt, RequestParams request_params,
                 int64_t arrival)
    : id(request_id),
      params(std::move(request_params)),
      arrival_ns(arrival),
      num_prompt_tokens(static_cast<int64_t>(prompt.size())),
      tokens(std::move(prompt)) {
  tokens.reserve(static_cast<size_t>(num_prompt_tokens + std::max<int64_t>(params.max_tokens, 0)));
}

std::span<const int32_t> Request::prompt() const {
  return std::span(tokens).first(static_cast<size_t>(num_prompt_tokens));
}

std::span<const int32_t> Request::output() const {
  return std::span(tokens).subspan(static_cast<size_t>(num_prompt_tokens));
}

bool Request::append_output(int32_t token) {
  tokens.push_back(token);
  auto contains = [token](const std::vector<int32_t>& ids) {
    return std::find(ids.begin(), ids.end(), token) != ids.end();
  };
  if (num_output_tokens() >= params.min_tokens &&
      ((!params.ignore_eos && contains(params.eos_token_ids)) || contains(params.stop_token_ids))) {
    finish_reason = FinishReason::kStop;
    stop_token_id = token;
  } else if (num_output_tokens() >= params.max_tokens) {
    finish_reason = FinishReason::kLength;
  } else {
    return false;
  }
  status = RequestStatus::kFinished;
  return true;
}

Usage Request::usage() const {
  return {.prompt_tokens = num_prompt_tokens,
          .completion_tokens = num_output_tokens(),
          .cached_tokens = num_cached_tokens};
}

RequestOutput Request::make_output() const {
  RequestOutput out;
  out.request_id = id;
  out.finished = finished();
  out.finish_reason = finish_reason;
  out.stop_token_id = stop_token_id;
  out.usage = usage();
  out.arrival_ns = arrival_ns;
  out.first_scheduled_ns = first_scheduled_ns;
  return out;
}

}  // namespace paceline
