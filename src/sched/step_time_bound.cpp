// --max-step-ms: a prefill chunk is cut so that the forward it joins is predicted to end within
// the cap. The prediction is the executor's step-cost model (measured steps on a real executor,
// the cost model under the simulator), read here without I/O, so that both clocks chunk alike.
#include <algorithm>

#include "sched/scheduler.h"

namespace paceline {

// The work of the rows planned so far in this pass.
StepWork Scheduler::pass_work(const Pass& pass) const {
  StepWork w;
  w.kind = pass.has_decode() ? ForwardKind::kMixed : ForwardKind::kPrefill;
  for (const Row& row : pass.rows) {
    const Request& r = *row.request;
    const int64_t start = r.num_computed_tokens;
    const int64_t logits =
        row.prefill ? (start + row.num_tokens == r.prefill_end ? 1 : 0) : row.num_tokens;
    w.add_row(start, row.num_tokens, logits);
  }
  return w;
}

// The most of `n` prefill tokens, from position `start` of `r`, that keep the pass's predicted
// time within the cap; 0 when none do. The pass's first prefill row always gets at least one
// token, so a prefill advances even when the rows before it (a mixed pass's decodes) fill the
// cap by themselves, or one token alone is predicted over it.
int64_t Scheduler::time_bounded_chunk(const Request& r, int64_t start, int64_t n,
                                      const Pass& pass) const {
  if (n <= 0 || config_.max_step_ms <= 0 || step_cost_ == nullptr ||
      !config_.enable_chunked_prefill) {
    return n;
  }
  const auto cap_ns = static_cast<int64_t>(config_.max_step_ms * 1e6);
  const StepWork base = pass_work(pass);
  const int64_t floor = pass.has_prefill() ? 0 : 1;
  const int64_t end = r.num_tokens();
  auto fits = [&](int64_t k) {
    StepWork w = base;
    if (r.status == RequestStatus::kRunning) {
      w.add_row(start, k, start + k == r.prefill_end ? 1 : 0);
    } else {
      w.add_row(start, k, start + k == end ? 1 : 0);  // an admission prefills the whole prompt
    }
    return step_cost_->predict_ns(w) <= cap_ns;
  };
  int64_t hi = std::min(n, step_cost_->trusted_tokens() - base.tokens);
  if (hi < 1) return std::min(n, floor);
  if (fits(hi)) return hi;
  // Predictions grow with the chunk: the largest k in [0, hi) that fits, by bisection.
  int64_t lo = 0;  // fits (an empty row adds nothing)
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    (fits(mid) ? lo : hi) = mid;
  }
  return std::max(lo, std::min(n, floor));
}

}  // namespace paceline
