#pragma once
// What a forward computes, reduced to the numbers its time depends on: what a cost model (the
// simulator's, or the scheduler's step-time estimate) reads of a plan.
#include <cstdint>

#include "sched/step_plan.h"

namespace paceline {

struct StepWork {
  ForwardKind kind = ForwardKind::kDecode;
  int64_t num_seqs = 0;
  int64_t tokens = 0;  // tokens computed: prefill chunks, decode and verify tokens
  // Decode replaying a CUDA graph: the captured batch size it is padded to; 0: eager.
  int64_t graph_batch = 0;
  // Rows a graph computes for nothing: (graph_batch - num_seqs) times the widest row's tokens.
  // They go through every linear layer and the LM head like real rows.
  int64_t padding_rows = 0;
  int64_t logit_rows = 0;  // rows that go through the LM head and the sampler (no padding)
  // KV positions attended: the sum over sequences of their context after this step.
  int64_t context = 0;
  // Causal query-key pairs: for a sequence with `s` cached positions and `n` new tokens,
  // n * s + n * (n + 1) / 2. Equals `context` for a decode.
  int64_t attention = 0;

  // Adds one row of `n` tokens starting at position `start`, with `logits` logit rows.
  void add_row(int64_t start, int64_t n, int64_t logits) {
    ++num_seqs;
    tokens += n;
    logit_rows += logits;
    context += start + n;
    attention += n * start + n * (n + 1) / 2;
  }
};

StepWork step_work(const StepPlan& plan);

}  // namespace paceline
