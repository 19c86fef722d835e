// One scheduler pass: the pieces (decode rows, partial prefills, admissions, preemption) and how
// the two compositions put them together.
#include <algorithm>

#include "base/error.h"
#include "sched/cudagraph_sizes.h"
#include "sched/scheduler.h"

namespace paceline {

bool Scheduler::Pass::has_prefill() const {
  return std::any_of(rows.begin(), rows.end(), [](const Row& row) { return row.prefill; });
}

bool Scheduler::Pass::has_decode() const {
  return std::any_of(rows.begin(), rows.end(), [](const Row& row) { return !row.prefill; });
}

StepPlan Scheduler::schedule() {
  if (in_flight_step_) fail("schedule() while step {} still awaits update()", *in_flight_step_);
  kv_.release_transfer_pins();  // the previous forward, which made the copies, is over
  if (running_.empty() && waiting_.empty()) return {};
  Pass pass = build_pass();
  // A pass can preempt its only candidate rows away: the delayer held prefills for the sake of a
  // decode that then preempted itself for want of a block. Nothing would run, and an engine
  // idles on an empty plan until a new request comes (the simulator for good), so the pass is
  // planned once more, for what is left.
  if (pass.rows.empty() && pass.preempted) pass = build_pass();
  // Nothing else runs: the copy budget protects no one, so the oldest admission still taking
  // its blocks takes them all now and prefills in this forward.
  if (pass.rows.empty() && complete_one_allocation()) pass = build_pass();
  return make_plan(pass);
}

// Admissions still taking their blocks under the copy budget go on, oldest first; a request
// whose loads are all planned has its tokens up to them cached.
void Scheduler::continue_allocations() {
  for (Request* r : running_) {
    if (r->blocks.complete()) continue;
    r->num_computed_tokens += kv_.continue_allocation(r->blocks) * config_.block_size;
  }
}

bool Scheduler::complete_one_allocation() {
  for (Request* r : running_) {
    if (r->blocks.complete()) continue;
    r->num_computed_tokens +=
        kv_.continue_allocation(r->blocks, /*capped=*/false) * config_.block_size;
    return true;
  }
  return false;
}

Scheduler::Pass Scheduler::build_pass() {
  const bool prefill_allowed = allow_prefill();  // the delayer's one question, before anything
  continue_allocations();
  Pass pass;
  pass.budget = config_.max_num_batched_tokens;
  // A pass that preempted admits nobody: what it freed goes to the requests already running.
  // Under short-first, a pass that admits short prefills runs them alone: no long prefill chunk
  // makes them wait for its forward.
  auto prefills = [&] {
    if (!pass.preempted && admit_short_prefills(pass)) return;
    schedule_partial_prefills(pass);
    if (!pass.preempted) admit_waiting(pass);
  };
  if (config_.schedule == ScheduleKind::kSeparate) {
    if (prefill_allowed) prefills();
    if (!pass.has_prefill()) schedule_decodes(pass);
  } else {
    schedule_decodes(pass);
    if (prefill_allowed) prefills();
  }
  return pass;
}

// Every decoding request in admission order, 1 token each (k + 1 with speculative decoding),
// while the budget lasts.
void Scheduler::schedule_decodes(Pass& pass) {
  for (size_t i = 0; i < running_.size(); ++i) {
    Request& r = *running_[i];
    if (r.in_prefill()) continue;
    const int64_t n = decode_tokens(r);
    if (n > pass.budget || !reserve(r, n, pass)) break;
    pass.rows.push_back({&r, n, false});
    pass.budget -= n;
  }
}

// The next chunk of every prefill already in flight, before any new admission.
void Scheduler::schedule_partial_prefills(Pass& pass) {
  for (size_t i = 0; i < running_.size() && pass.budget > 0; ++i) {
    Request& r = *running_[i];
    if (!r.in_prefill() || !r.blocks.complete()) continue;  // not yet: its copies are under way
    const int64_t n = time_bounded_chunk(
        r, r.num_computed_tokens,
        prefill_chunk(r.prefill_end - r.num_computed_tokens, pass.budget), pass);
    if (n == 0 || !reserve(r, n, pass)) break;
    pass.rows.push_back({&r, n, true});
    pass.budget -= n;
  }
}

// Waiting requests in queue order while a sequence slot, budget and KV blocks for the whole
// prompt last. The first that does not fit stops admission: nobody overtakes an older request,
// except under lpm (admit_by_prefix).
void Scheduler::admit_waiting(Pass& pass) {
  while (!waiting_.empty() && num_running() < config_.max_num_seqs && pass.budget > 0) {
    Request& r = *waiting_.front();
    const PrefixHit hit = kv_.find_cached_prefix(r.blocks, r.tokens);
    const Admit result = try_admit(r, hit, pass);
    if (result == Admit::kNoKv && config_.admission == AdmissionPolicy::kLpm) {
      admit_by_prefix(pass);
      return;
    }
    if (result != Admit::kAdmitted) return;
    waiting_.pop_front();
  }
}

// The queue's head does not fit the KV cache: admit the others longest cached prefix first, each
// that fits, as long as nobody has waited beyond the bound (then that one must go next).
void Scheduler::admit_by_prefix(Pass& pass) {
  const int64_t now = clock_.now_ns();
  const auto bound_ns = static_cast<int64_t>(config_.lpm_max_wait_ms * 1e6);
  if (now - waiting_.front()->arrival_ns > bound_ns) return;
  std::vector<std::pair<Request*, PrefixHit>> order;
  for (Request* r : waiting_) {
    if (now - r->arrival_ns > bound_ns) break;  // it stops the line; nobody behind it overtakes
    PrefixHit hit = kv_.find_cached_prefix(r->blocks, r->tokens);
    if (hit.num_tokens > 0) order.emplace_back(r, std::move(hit));
  }
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return a.second.num_tokens > b.second.num_tokens;
  });
  for (auto& [r, first_probe] : order) {
    if (num_running() >= config_.max_num_seqs || pass.budget <= 0) break;
    // Probed again: an admission before it may have evicted part of what it found.
    const PrefixHit hit = kv_.find_cached_prefix(r->blocks, r->tokens);
    if (try_admit(*r, hit, pass) == Admit::kAdmitted) std::erase(waiting_, r);
  }
}

// Admits one waiting request with its prefix hit into this pass, if it fits.
Scheduler::Admit Scheduler::try_admit(Request& r, const PrefixHit& probed, Pass& pass) {
  // Prompt logprobs need every prompt position's logits: no cached prefix until they are out.
  PrefixHit uncached;
  uncached.num_query_tokens = probed.num_query_tokens;
  const PrefixHit& hit = r.wants_prompt_logprobs() ? uncached : probed;
  const int64_t n = time_bounded_chunk(
      r, hit.num_tokens, prefill_chunk(r.num_tokens() - hit.num_tokens, pass.budget), pass);
  if (n == 0) return Admit::kNoBudget;
  // Blocks for the whole prompt, not just the first chunk: later chunks then never preempt,
  // and a prompt is not admitted into a cache that cannot finish it (nano-vllm's rule). Under
  // the copy budget some may be held in reserve, taken over the next passes; the request then
  // has no row until it has them all (its loads planned).
  if (!kv_.allocate_for(r.blocks, r.num_tokens(), hit, /*capped=*/true)) return Admit::kNoKv;
  if (!r.admitted_before()) {
    r.first_scheduled_ns = clock_.now_ns();
    r.num_cached_tokens = hit.num_tokens;
    totals_.prompt_tokens += r.num_prompt_tokens;
  }
  r.status = RequestStatus::kRunning;
  r.num_computed_tokens =
      hit.num_tokens - static_cast<int64_t>(r.blocks.pending_loads.size()) * config_.block_size;
  r.prefill_end = r.num_tokens();
  running_.push_back(&r);
  if (!r.blocks.complete()) return Admit::kAdmitted;
  pass.rows.push_back({&r, n, true});
  pass.budget -= n;
  return Admit::kAdmitted;
}

// Makes room for num_tokens more of a running request, preempting the newest running requests
// until it fits. False when the request itself was the newest and got preempted.
bool Scheduler::reserve(Request& r, int64_t num_tokens, Pass& pass) {
  while (!kv_.allocate_for(r.blocks, r.num_computed_tokens + num_tokens)) {
    Request& victim = *running_.back();
    preempt(victim, pass);
    if (&victim == &r) return false;
  }
  return true;
}

// Preemption by recompute: the victim (the newest running request) loses its KV blocks and its
// row in this pass, and goes back to the front of the queue. Its output so far is kept; it is
// recomputed with the prompt when the request is admitted again.
void Scheduler::preempt(Request& victim, Pass& pass) {
  running_.pop_back();
  auto row = std::find_if(pass.rows.begin(), pass.rows.end(),
                          [&](const Row& x) { return x.request == &victim; });
  if (row != pass.rows.end()) {
    pass.budget += row->num_tokens;
    pass.rows.erase(row);
  }
  kv_.free(victim.blocks);
  victim.status = RequestStatus::kPreempted;
  victim.num_computed_tokens = 0;
  victim.prefill_end = 0;
  ++victim.num_preemptions;
  waiting_.push_front(&victim);
  kv_.want_prefix(victim.blocks, victim.tokens, victim.arrival_ns);
  pass.preempted = true;
  ++totals_.preemptions;
}

// Tokens of a prefill to compute in this pass, or 0 when it cannot go now.
int64_t Scheduler::prefill_chunk(int64_t remaining, int64_t budget) const {
  if (!config_.enable_chunked_prefill) return remaining <= budget ? remaining : 0;
  int64_t n = std::min(remaining, budget);
  if (config_.long_prefill_token_threshold > 0) {
    n = std::min(n, config_.long_prefill_token_threshold);
  }
  return std::max<int64_t>(n, 0);
}

// 1, or k + 1 with speculative decoding; fewer drafts near max_tokens, so that no position past
// the request's last possible token is ever computed.
int64_t Scheduler::decode_tokens(const Request& r) const {
  if (!spec_) return 1;
  const int64_t drafts = std::min<int64_t>(spec_->speculative_tokens(),
                                           std::max<int64_t>(0, r.remaining_output_tokens() - 1));
  return 1 + drafts;
}

StepPlan Scheduler::make_plan(const Pass& pass) {
  StepPlan plan;
  if (pass.rows.empty()) return plan;  // its copies, if any, go with the next forward
  plan.kv_transfers = kv_.take_transfers();
  plan.step_id = next_step_id_++;
  const bool prefill = pass.has_prefill(), decode = pass.has_decode();
  plan.kind = prefill && decode ? ForwardKind::kMixed
              : prefill         ? ForwardKind::kPrefill
                                : ForwardKind::kDecode;
  plan.seqs.reserve(pass.rows.size());
  for (const Row& row : pass.rows) {
    const Request& r = *row.request;
    ScheduledSeq& s = plan.seqs.emplace_back();
    s.request_id = r.id;
    s.start_pos = r.num_computed_tokens;
    const int64_t end = s.start_pos + row.num_tokens;
    if (row.prefill) {
      s.tokens.assign(r.tokens.begin() + s.start_pos, r.tokens.begin() + end);
      s.num_logits = end == r.prefill_end ? 1 : 0;
    } else {
      // Draft tokens repeat the last one: acceptance is synthetic, only the count matters.
      s.tokens.assign(static_cast<size_t>(row.num_tokens), r.tokens.back());
      s.num_logits = static_cast<int32_t>(row.num_tokens);
    }
    const int64_t blocks = (end + config_.block_size - 1) / config_.block_size;
    s.block_table = std::span<const int32_t>(r.blocks.ids).first(static_cast<size_t>(blocks));
    s.sampling = r.params.sampling;
    s.seed = sampling_seed(r);
    if (s.sampling.has_penalties()) {
      s.history = r.tokens;
      s.num_prompt_tokens = r.num_prompt_tokens;
    }
    s.num_logprobs = r.params.logprobs;
    if (row.prefill && r.wants_prompt_logprobs()) {
      // Position q's logits score prompt token q + 1; the last prompt position's are the sample.
      const int64_t from = std::max(s.start_pos, r.prompt_logprobs_next - 1);
      const int64_t to = std::min(end, r.num_prompt_tokens - 1);
      if (from < to) {
        s.prompt_logprobs_from = from;
        s.prompt_logprob_targets.assign(r.tokens.begin() + from + 1, r.tokens.begin() + to + 1);
      }
    }
  }
  if (plan.kind == ForwardKind::kDecode) {
    plan.padded_batch_size =
        padded_batch_size(cudagraph_sizes_, static_cast<int32_t>(plan.seqs.size()));
  }
  switch (plan.kind) {
    case ForwardKind::kPrefill:
      ++totals_.prefill_steps;
      break;
    case ForwardKind::kDecode:
      ++totals_.decode_steps;
      break;
    case ForwardKind::kMixed:
      ++totals_.mixed_steps;
      break;
  }
  in_flight_step_ = plan.step_id;
  return plan;
}

}  // namespace paceline
