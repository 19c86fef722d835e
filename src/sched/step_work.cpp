#include "sched/step_work.h"

#include <algorithm>

namespace paceline {

StepWork step_work(const StepPlan& plan) {
  StepWork w;
  w.kind = plan.kind;
  int64_t widest = 0;  // tokens of the widest row: a graph's padding rows are that wide
  for (const ScheduledSeq& s : plan.seqs) {
    const auto n = static_cast<int64_t>(s.tokens.size());
    w.add_row(s.start_pos, n, s.num_logits);
    widest = std::max(widest, n);
  }
  if (plan.kind == ForwardKind::kDecode && plan.padded_batch_size > 0) {
    w.graph_batch = plan.padded_batch_size;
    w.padding_rows = std::max<int64_t>(0, w.graph_batch - w.num_seqs) * widest;
  }
  return w;
}

}  // namespace paceline
