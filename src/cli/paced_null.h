#pragma once
// `serve --device null --pace-profile P`: the null executor held to the step times of a
// simulator profile (sim/paced_executor.h), with its KV cache and host tier sized from the
// profile exactly as `paceline sim --profile P` sizes its engine. A real server then runs the
// simulator's assumptions in real time, so the two can be compared request by request.
#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "base/clock.h"
#include "cli/model_options.h"
#include "exec/executor.h"

namespace paceline {

struct PaceOptions {
  std::string profile;             // empty: not paced
  double host_kv_bandwidth = 46;   // GB/s each way, as paceline sim's default
};

void add_pace_options(CLI::App& cmd, PaceOptions& options);

// The paced null executor for `model`; `clock` (the engine's steady clock) must outlive it.
// Throws paceline::Error on a profile that cannot be read or a device other than null.
std::unique_ptr<Executor> make_paced_null_executor(const ModelOptions& options,
                                                   const LoadedModel& model,
                                                   const PaceOptions& pace, const Clock& clock);

}  // namespace paceline
