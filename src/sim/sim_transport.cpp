#include "sim/sim_transport.h"

#include <algorithm>
#include <utility>

#include "base/error.h"

namespace paceline::sim {

SimTransport::SimTransport(Scheduler& scheduler, Executor& executor, const VirtualClock& clock,
                           bench::TokenPromptConfig prompt)
    : scheduler_(scheduler), executor_(executor), clock_(clock), prompt_(prompt) {}

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
    scheduler_.add_request(spec.id, bench::synthesize_prompt_tokens(spec, prompt_),
                           std::move(params));
  } catch (const Error& e) {
    refusals_.push_back({now, spec.id, e.what()});
    return;
  }
  if (!step_ && !wake_ns_) wake_ns_ = now;
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
  scheduler_.cancel(request_id);  // a row of the step in flight is then ignored by update()
  std::erase_if(refusals_, [&](const Refusal& r) { return r.id == request_id; });
}

std::optional<int64_t> SimTransport::next_event_ns() const {
  std::optional<int64_t> t;
  auto earliest = [&](int64_t x) { t = t ? std::min(*t, x) : x; };
  if (!refusals_.empty()) earliest(refusals_.front().at_ns);
  if (step_) earliest(step_->end_ns);
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
    if (step_ && step_->end_ns <= now_ns) {
      const int64_t end = step_->end_ns;
      finish_step();
      start_step(end);  // the engine loop goes straight on to the next pass
      continue;
    }
    if (!step_ && wake_ns_ && *wake_ns_ <= now_ns) {
      const int64_t at = *wake_ns_;
      wake_ns_.reset();
      start_step(at);
      continue;
    }
    return;
  }
}

void SimTransport::start_step(int64_t now_ns) {
  StepPlan plan = scheduler_.schedule();
  if (plan.seqs.empty()) return;  // idle until the next send
  StepResult result = executor_.execute(plan);
  const int64_t end = now_ns + std::max<int64_t>(1, result.step_time_ns);
  step_ = Step{std::move(plan), std::move(result), end};
}

void SimTransport::finish_step() {
  Step step = std::move(*step_);
  step_.reset();
  for (const RequestOutput& out : scheduler_.update(step.plan, step.result)) {
    deliver(out, step.end_ns);
  }
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
