// What the PrefillDelayer is told before each pass (../shared/specs/prefill-delayer.md, "Inputs
// each pass"). Measured without changing anything: probing the prefix cache only fills hash memos.
#include <algorithm>
#include <limits>

#include "sched/scheduler.h"

namespace paceline {

bool Scheduler::allow_prefill() {
  if (!delayer_) return true;
  return delayer_->allow_prefill(delayer_inputs());
}

PrefillDelayerInputs Scheduler::delayer_inputs() {
  PrefillDelayerInputs in;
  const int64_t max_tokens = config_.max_num_batched_tokens;
  int64_t num_partial = 0, partial_tokens = 0, decode_total = 0;
  for (const Request* r : running_) {
    if (r->in_prefill()) {
      ++num_partial;
      partial_tokens += r->prefill_end - r->num_computed_tokens;
    } else {
      decode_total += decode_tokens(*r);
    }
  }
  in.has_partial = num_partial > 0;
  in.running_decode = num_running() - num_partial;
  in.kv_usage = kv_.usage();

  // Mixed passes give decode tokens the budget first; separate prefill passes have all of it.
  const int64_t budget = config_.schedule == ScheduleKind::kMixed
                             ? std::max<int64_t>(0, max_tokens - decode_total)
                             : max_tokens;
  // Waiting requests in queue order, each while it would still fit: a sequence slot, KV blocks
  // (after its prefix hit) for its whole prompt, as admission asks, and room in the forward.
  int64_t pending = partial_tokens;
  int64_t free_blocks = kv_.num_free_blocks();
  int64_t slots = config_.max_num_seqs - num_running();
  bool head_fits = false;
  for (Request* r : waiting_) {
    if (slots <= 0 || pending >= max_tokens) break;
    const PrefixHit hit = kv_.find_cached_prefix(r->blocks, r->tokens);
    const int64_t new_tokens = r->num_tokens() - hit.num_tokens;
    const int64_t chunk = prefill_chunk(new_tokens, std::max<int64_t>(0, budget - pending));
    if (chunk == 0) break;
    const int64_t need = kv_.free_blocks_needed(r->blocks, r->num_tokens(), hit);
    if (need > free_blocks) break;
    free_blocks -= need;
    --slots;
    head_fits = head_fits || r == waiting_.front();
    pending += new_tokens;
  }
  in.prefillable = in.has_partial || head_fits;
  in.pending_tokens = std::min(pending, max_tokens);

  if (config_.delayer.max_queue_ms && !waiting_.empty()) {
    int64_t oldest = std::numeric_limits<int64_t>::max();
    for (const Request* r : waiting_) oldest = std::min(oldest, r->arrival_ns);
    in.oldest_wait_ms = static_cast<double>(clock_.now_ns() - oldest) / 1e6;
  }
  return in;
}

}  // namespace paceline
