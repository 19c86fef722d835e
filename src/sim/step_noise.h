#pragma once
// Step-time variation in the simulator. A cost model predicts a step's mean time; a real server's
// steps scatter around it, and not independently: the machine speeds up and slows down over
// seconds (a CPU server's batch-1 decodes correlate 0.84 with the next step and 0.55 ten steps
// on), and a slow stretch slows every kind of step at once. Per-request latencies are averages
// over many steps, so that drift is what makes a p90 differ from a p50. A profile fitted to a
// step log knows it: each logged step's measured time over the fit's prediction, at the time the
// step started (CostModel::step_time_series). `StepNoise` replays that record on the virtual
// clock: a step starting at virtual time t takes the ratio of the last logged step of its kind
// that started at or before (t + offset) modulo the record's span, the offset drawn from a seed
// and shared by every kind, so that the kinds stay in step as they were on the server.
// Deterministic: the same seed gives the same factors at the same times.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "sched/step_plan.h"
#include "sim/cost_model.h"

namespace paceline::sim {

enum class StepNoiseMode {
  kAuto,    // replay when the profile has a step-time series, else none
  kNone,    // every step takes the cost model's prediction
  kReplay,  // the profile's series on the virtual clock (an error when it has none)
};

std::optional<StepNoiseMode> step_noise_mode_from_name(std::string_view name);
const char* step_noise_mode_name(StepNoiseMode mode);

// What a run with this cost model does: kReplay or kNone (auto: replay when the model has a
// step-time series). kReplay without a series throws paceline::Error naming `profile`.
StepNoiseMode resolve_step_noise(StepNoiseMode mode, const CostModel& cost,
                                 const std::string& profile);

class StepNoise {
 public:
  StepNoise() = default;  // inactive: every factor is 1
  // Replays `cost.step_time_series(kind)` for each kind, shifted by an offset drawn from `seed`.
  StepNoise(const CostModel& cost, uint64_t seed);

  bool active() const;
  // The factor for a step of this kind starting at virtual time `now_ns` (1 when the kind has
  // no series).
  double factor(ForwardKind kind, int64_t now_ns) const;
  // Logged steps of a kind (0: none).
  size_t size(ForwardKind kind) const;
  double offset_us() const { return offset_us_; }

 private:
  std::array<const StepTimeSeries*, kNumForwardKinds> series_{};
  double offset_us_ = 0;
};

}  // namespace paceline::sim
