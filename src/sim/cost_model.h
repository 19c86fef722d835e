#pragma once
// The simulator's cost model: how long one forward would take, from the work its StepPlan
// describes. Two models implement it: the analytic roofline of a named GPU (roofline_profile.h)
// and a fit to a table of measured steps (profile_table.h). The features are the same for both,
// so a measured profile and the roofline can be compared point by point.
#include <cstdint>
#include <string>
#include <vector>

#include "sched/step_plan.h"
#include "sched/step_work.h"

namespace paceline::sim {

// StepWork and step_work() live in the scheduler's module (sched/step_work.h), whose step-time
// bound reads the same numbers of a plan.
using paceline::StepWork;
using paceline::step_work;

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
