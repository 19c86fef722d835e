#include "sim/step_noise.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "bench/rng.h"

namespace paceline::sim {

std::optional<StepNoiseMode> step_noise_mode_from_name(std::string_view name) {
  if (name == "auto") return StepNoiseMode::kAuto;
  if (name == "none") return StepNoiseMode::kNone;
  if (name == "replay") return StepNoiseMode::kReplay;
  return std::nullopt;
}

const char* step_noise_mode_name(StepNoiseMode mode) {
  switch (mode) {
    case StepNoiseMode::kAuto:
      return "auto";
    case StepNoiseMode::kNone:
      return "none";
    case StepNoiseMode::kReplay:
      return "replay";
  }
  return "none";
}

StepNoiseMode resolve_step_noise(StepNoiseMode mode, const CostModel& cost,
                                 const std::string& profile) {
  if (mode == StepNoiseMode::kNone) return mode;
  bool has_series = false;
  for (ForwardKind kind : {ForwardKind::kPrefill, ForwardKind::kDecode, ForwardKind::kMixed}) {
    has_series = has_series || cost.step_time_series(kind) != nullptr;
  }
  if (!has_series && mode == StepNoiseMode::kReplay) {
    fail("--step-noise replay: --profile {} has no steps in time order to replay (fit a profile "
         "to a server's step log: paceline profile --from-step-log)",
         profile);
  }
  return has_series ? StepNoiseMode::kReplay : StepNoiseMode::kNone;
}

StepNoise::StepNoise(const CostModel& cost, uint64_t seed) {
  double span_us = 0;
  for (ForwardKind kind : {ForwardKind::kPrefill, ForwardKind::kDecode, ForwardKind::kMixed}) {
    const StepTimeSeries* s = cost.step_time_series(kind);
    if (s == nullptr || s->t_us.empty() || s->t_us.size() != s->ratio.size() ||
        !(s->span_us > 0)) {
      continue;
    }
    series_[forward_kind_index(kind)] = s;
    span_us = s->span_us;
  }
  // A whole number of microseconds in [0, span): the 53 high bits of a 64-bit draw.
  const double unit = static_cast<double>(bench::mix64(seed) >> 11) * 0x1.0p-53;
  offset_us_ = std::floor(unit * span_us);
}

bool StepNoise::active() const {
  return std::any_of(series_.begin(), series_.end(), [](const auto* s) { return s != nullptr; });
}

double StepNoise::factor(ForwardKind kind, int64_t now_ns) const {
  const StepTimeSeries* s = series_[forward_kind_index(kind)];
  if (s == nullptr) return 1.0;
  const double at =
      s->start_us + std::fmod(static_cast<double>(now_ns) / 1000.0 + offset_us_, s->span_us);
  // The last step of the kind that started at or before `at`; before the first, the record's last
  // (the record wraps around).
  const auto it = std::upper_bound(s->t_us.begin(), s->t_us.end(), at);
  const size_t i = it == s->t_us.begin() ? s->t_us.size() - 1
                                         : static_cast<size_t>(it - s->t_us.begin()) - 1;
  return s->ratio[i];
}

size_t StepNoise::size(ForwardKind kind) const {
  const StepTimeSeries* s = series_[forward_kind_index(kind)];
  return s == nullptr ? 0 : s->t_us.size();
}

}  // namespace paceline::sim
