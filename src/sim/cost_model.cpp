#include "sim/cost_model.h"

#include <algorithm>

namespace paceline::sim {

StepWork step_work(const StepPlan& plan) {
  StepWork w;
  w.kind = plan.kind;
  w.num_seqs = static_cast<int64_t>(plan.seqs.size());
  int64_t widest = 0;  // tokens of the widest row: a graph's padding rows are that wide
  for (const ScheduledSeq& s : plan.seqs) {
    const auto n = static_cast<int64_t>(s.tokens.size());
    w.tokens += n;
    w.logit_rows += s.num_logits;
    w.context += s.start_pos + n;
    w.attention += n * s.start_pos + n * (n + 1) / 2;
    widest = std::max(widest, n);
  }
  if (plan.kind == ForwardKind::kDecode && plan.padded_batch_size > 0) {
    w.graph_batch = plan.padded_batch_size;
    w.padding_rows = std::max<int64_t>(0, w.graph_batch - w.num_seqs) * widest;
  }
  return w;
}

}  // namespace paceline::sim
