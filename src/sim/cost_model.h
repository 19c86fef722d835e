#pragma once
// The simulator's cost model: how long one forward would take, from the work its StepPlan
// describes. Two models implement it: the analytic roofline of a named GPU (roofline_profile.h)
// and a fit to a table of measured steps (profile_table.h). The features are the same for both,
// so a measured profile and the roofline can be compared point by point.
#include <cstdint>
#include <string>
#include <vector>

#include "sched/step_plan.h"

namespace paceline::sim {

// What a forward computes, reduced to the numbers its time depends on.
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
};

StepWork step_work(const StepPlan& plan);

// How a server's steps of one kind compared with a fit, in the order they ran: step i started at
// t_us[i] on the server's clock (ascending) and took ratio[i] times the predicted time. All kinds
// of one record share its clock and its span: the time from its first step's start to its last
// step's end.
struct StepTimeSeries {
  std::vector<double> t_us;
  std::vector<double> ratio;
  double start_us = 0;
  double span_us = 0;
};

class CostModel {
 public:
  virtual ~CostModel() = default;
  // Predicted wall time of the forward, in ns; at least 1 for a non-empty step.
  virtual int64_t step_time_ns(const StepWork& work) const = 0;
  // A one-line description for logs and the summary ("roofline h200, qwen3-8b").
  virtual std::string describe() const = 0;
  // Whether the prediction for this step lies beyond what the model was measured on (a fitted
  // table asked for more rows than any measured step of the kind had): it extrapolates.
  virtual bool extrapolates(const StepWork& /*work*/) const { return false; }
  // The steps of this kind the model was fitted to, as a time series of measured over predicted
  // time (step_noise.h replays it); nullptr when the model knows no such series (a roofline, a
  // grid of medians).
  virtual const StepTimeSeries* step_time_series(ForwardKind /*kind*/) const { return nullptr; }
};

}  // namespace paceline::sim
