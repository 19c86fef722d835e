// Admission under --schedule-policy short-first: the waiting requests whose prompt is mostly
// resident in the KV cache (either tier) go ahead of the queue and of the prefills in flight, in
// a forward of their own. When agent sessions outnumber memory, every turn that finds its
// session evicted recomputes up to 100k tokens; under fcfs the turns behind it, whose sessions
// are cached and which need a few hundred tokens, wait for all of it (docs/kv-tiers.md).
#include <algorithm>

#include "sched/scheduler.h"

namespace paceline {

namespace {

// A prefill of at most this share of the forward's token budget is short.
constexpr int64_t kShortShareOfBudget = 4;
// The most forwards of short prefills in a row while others wait.
// Measured in the simulator (docs/kv-tiers.md): 4 gave the same at C = 16 and less at C = 32
// with the host tier (hit 0.644 against 0.674); a forward of short prefills is brief (0.1-0.3 s).
constexpr int kMaxShortPassesInARow = 16;

}  // namespace

bool Scheduler::admit_short_prefills(Pass& pass) {
  if (config_.admission != AdmissionPolicy::kShortFirst || waiting_.empty()) return false;
  // Nothing starves: after kMaxShortPassesInARow forwards of short prefills, the next pass goes
  // in order (the prefills in flight, then the queue's head), so a long prefill gets at least
  // one forward in kMaxShortPassesInARow + 1.
  if (short_passes_in_a_row_ >= kMaxShortPassesInARow) {
    short_passes_in_a_row_ = 0;
    return false;
  }
  const int64_t short_tokens = config_.max_num_batched_tokens / kShortShareOfBudget;
  std::vector<Request*> admitted;
  for (Request* r : waiting_) {
    if (num_running() >= config_.max_num_seqs || pass.budget <= 0) break;
    if (r->wants_prompt_logprobs()) continue;  // it skips the cache: its prefill is the prompt
    // The whole blocks it must find cached to be short; one lookup rules most long ones out.
    const int64_t need_tokens = r->num_tokens() - short_tokens;
    const int64_t need_blocks = (need_tokens + kv_.block_size() - 1) / kv_.block_size();
    if (need_tokens > 0 && !kv_.may_hit_blocks(r->blocks, r->tokens, need_blocks)) continue;
    const PrefixHit hit = kv_.find_cached_prefix(r->blocks, r->tokens);
    if (r->num_tokens() - hit.num_tokens > short_tokens) continue;
    if (try_admit(*r, hit, pass) == Admit::kAdmitted) admitted.push_back(r);
  }
  for (Request* r : admitted) std::erase(waiting_, r);
  if (!pass.has_prefill()) {
    short_passes_in_a_row_ = 0;
    return false;
  }
  ++short_passes_in_a_row_;
  return true;
}

}  // namespace paceline
