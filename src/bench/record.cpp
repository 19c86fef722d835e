#include "bench/record.h"

#include <algorithm>
#include <cctype>

#include "base/error.h"

namespace paceline::bench {

const char* status_name(RecordStatus s) {
  switch (s) {
    case RecordStatus::kInFlight:
      return "in_flight";
    case RecordStatus::kOk:
      return "ok";
    case RecordStatus::kError:
      return "error";
    case RecordStatus::kIncomplete:
      return "incomplete";
  }
  return "?";
}

bool looks_like_context_overflow(int http_status, std::string_view text) {
  if (http_status != 400 && http_status != 413 && http_status != 422) return false;
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (const char* needle : {"context length", "context window", "maximum context", "too long",
                             "too many tokens", "max_model_len", "context_length_exceeded"}) {
    if (lower.find(needle) != std::string::npos) return true;
  }
  return false;
}

RequestRecord& RecordLog::open(RequestSpec& spec, int64_t now_ns, int64_t trace_reusable_tokens) {
  spec.id = records_.size();
  RequestRecord& r = records_.emplace_back();
  r.id = spec.id;
  r.phase = spec.phase;
  r.lane = spec.lane;
  r.session = spec.session;
  r.play = spec.play;
  r.stream = spec.stream;
  r.agent = spec.agent;
  r.turn = spec.turn;
  r.scheduled_ns = rel(spec.scheduled_ns);
  r.start_ns = rel(now_ns);
  r.requested_isl = spec.isl;
  r.requested_osl = spec.osl;
  r.isl = spec.isl;
  r.trace_reusable_tokens = trace_reusable_tokens;
  return r;
}

RequestRecord* RecordLog::live(uint64_t id) {
  if (id >= records_.size()) fail("request id {} was never opened", id);
  RequestRecord& r = records_[id];
  return r.status == RecordStatus::kInFlight ? &r : nullptr;
}

bool RecordLog::first_token(uint64_t id, int64_t t_ns) {
  RequestRecord* r = live(id);
  if (!r) return false;
  if (r->first_token_ns < 0) r->first_token_ns = rel(t_ns);
  return true;
}

bool RecordLog::chunk(uint64_t id, int64_t t_ns, int64_t n_tokens) {
  RequestRecord* r = live(id);
  if (!r) return false;
  int64_t t = rel(t_ns);
  if (r->first_token_ns < 0) r->first_token_ns = t;
  r->last_token_ns = t;
  r->chunk_ns.push_back(t);
  r->chunk_tokens.push_back(n_tokens);
  return true;
}

bool RecordLog::done(uint64_t id, int64_t t_ns, const Usage& usage) {
  RequestRecord* r = live(id);
  if (!r) return false;
  r->end_ns = rel(t_ns);
  r->http_status = 200;
  r->stream_completed = true;
  int64_t local_osl = 0;
  for (int64_t n : r->chunk_tokens) local_osl += n;
  r->usage_reported = usage.prompt_tokens >= 0 && usage.completion_tokens >= 0;
  r->isl = usage.prompt_tokens >= 0 ? usage.prompt_tokens : r->requested_isl;
  r->osl = usage.completion_tokens >= 0 ? usage.completion_tokens : local_osl;
  r->cached_tokens = usage.cached_tokens;
  if (r->chunk_ns.empty()) {
    // Without a content chunk TTFT and E2EL do not exist; such an answer is a failure.
    r->status = RecordStatus::kError;
    r->error = "the stream ended without any content";
    return true;
  }
  r->status = RecordStatus::kOk;
  return true;
}

bool RecordLog::error(uint64_t id, int64_t t_ns, int http_status, const std::string& text) {
  RequestRecord* r = live(id);
  if (!r) return false;
  r->end_ns = rel(t_ns);
  r->status = RecordStatus::kError;
  r->http_status = http_status;
  r->error = text;
  r->context_overflow = looks_like_context_overflow(http_status, text);
  return true;
}

bool RecordLog::incomplete(uint64_t id, int64_t t_ns) {
  RequestRecord* r = live(id);
  if (!r) return false;
  r->end_ns = rel(t_ns);
  r->status = RecordStatus::kIncomplete;
  r->error = "still in flight when the run ended";
  return true;
}

}  // namespace paceline::bench
