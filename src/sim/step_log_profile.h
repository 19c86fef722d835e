#pragma once
// A measured profile from a real server's own steps: the lines of `paceline serve --step-log`
// files (engine/step_log.h). Each executed step becomes a point whose time is the engine's whole
// iteration (the forward plus the loop's scheduling and delivery), measured under the load the
// server was serving, so the cost model learns the serving path as it ran.
#include <string>
#include <vector>

#include "model/config.h"
#include "sim/profile_table.h"

namespace paceline::sim {

// Reads the logs (all from the same device and model, which must be `model`) into one table.
// Throws paceline::Error naming the file and line of anything malformed.
ProfileTable profile_from_step_logs(const std::vector<std::string>& paths,
                                    const ModelConfig& model);

}  // namespace paceline::sim
