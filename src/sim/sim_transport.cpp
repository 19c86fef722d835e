#include "sim/sim_transport.h"

#include <algorithm>
#include <utility>

#include "base/error.h"

namespace paceline::sim {

SimTransport::SimTransport(EngineCore& core, const VirtualClock& clock,
                           bench::TokenPromptConfig prompt)
    : core_(core), clock_(clock), prompt_(prompt) {}

void SimTransport::send(const bench::RequestSpec& spec, bench::StreamCallbacks callbacks) {
  const int64_t now = clock_.now_ns();
  if (streams_.contains(spec.id)) fail("request {} was sent twice", spec.id);
  bench::RequestSpec key = spec;
  key.hash_ids.clear();
  streams_.emplace(spec.id, Stream{std::move(callbacks), false, std::move(key)});
  RequestParams params;
  params.max_tokens = spec.osl;
  params.min_tokens = spec.osl;
  params.ignore_eos = true;
  params.arrival_ns = now;
  try {
    core_.add(spec.id, bench::synthesize_prompt_tokens(spec, prompt_), std::move(params));
  } catch (const Error& e) {
    refusals_.push_back({now, spec.id, e.what()});
    return;
  }
  if (!step_end_ns_ && !wake_ns_) wake_ns_ = now;
}

void SimTransport::announce(const bench::RequestSpec& spec, int64_t at_ns) {
  if (oracle_) oracle_->announce(spec, at_ns);
}

void SimTransport::forget(std::map<uint64_t, Stream>::iterator it) {
  if (oracle_) oracle_->withdraw(it->second.spec);
  streams_.erase(it);
}

void SimTransport::cancel(uint64_t request_id) {
  auto it = streams_.find(request_id);
  if (it == streams_.end()) return;
  forget(it);
  core_.cancel(request_id);  // a row of the step in flight is then dropped at its end
  std::erase_if(refusals_, [&](const Refusal& r) { return r.id == request_id; });
}

std::optional<int64_t> SimTransport::next_event_ns() const {
  std::optional<int64_t> t;
  auto earliest = [&](int64_t x) { t = t ? std::min(*t, x) : x; };
  if (!refusals_.empty()) earliest(refusals_.front().at_ns);
  if (step_end_ns_) earliest(*step_end_ns_);
  if (wake_ns_) earliest(*wake_ns_);
  return t;
}

void SimTransport::advance_to(int64_t now_ns) {
  for (;;) {
    if (!refusals_.empty() && refusals_.front().at_ns <= now_ns) {
      Refusal r = std::move(refusals_.front());
      refusals_.erase(refusals_.begin());
      auto it = streams_.find(r.id);
      if (it == streams_.end()) continue;
      bench::StreamCallbacks cb = std::move(it->second.callbacks);
      forget(it);
      cb.on_error(r.at_ns, 400, r.text);
      continue;
    }
    if (step_end_ns_ && *step_end_ns_ <= now_ns) {
      const int64_t end = *step_end_ns_;
      end_step();
      begin_step(end);  // the engine loop goes straight on to the next pass
      continue;
    }
    if (!step_end_ns_ && wake_ns_ && *wake_ns_ <= now_ns) {
      const int64_t at = *wake_ns_;
      wake_ns_.reset();
      begin_step(at);
      continue;
    }
    return;
  }
}

void SimTransport::begin_step(int64_t now_ns) {
  const std::optional<StepStart> step = core_.begin_step();
  if (!step) return;  // idle until the next send
  step_end_ns_ = now_ns + std::max<int64_t>(1, step->duration_ns);
}

void SimTransport::end_step() {
  const int64_t end = *step_end_ns_;
  step_end_ns_.reset();
  core_.end_step([&](const RequestOutput& out) { deliver(out, end); });
}

void SimTransport::deliver(const RequestOutput& out, int64_t t_ns) {
  auto it = streams_.find(out.request_id);
  if (it == streams_.end()) return;  // cancelled
  Stream& s = it->second;
  if (!out.new_token_ids.empty()) {
    if (!s.first_token_sent) {
      s.first_token_sent = true;
      s.callbacks.on_first_token(t_ns);
    }
    s.callbacks.on_chunk(t_ns, static_cast<int64_t>(out.new_token_ids.size()));
  }
  if (!out.finished) return;
  bench::StreamCallbacks cb = std::move(s.callbacks);
  forget(it);
  const bench::Usage usage{out.usage.prompt_tokens, out.usage.completion_tokens,
                           out.usage.cached_tokens};
  cb.on_done(t_ns, usage);
}

}  // namespace paceline::sim
