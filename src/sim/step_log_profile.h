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
// A step that copied host-tier blocks (kv_stores, kv_loads) has the copies' time taken out, as the
// simulator charges them (the longer direction's blocks x block bytes / host_kv_bytes_per_s), so
// that a simulation with the host tier does not pay them twice; a step left with no time by that
// is dropped (counted in the table's notes). Throws paceline::Error naming the file and line of
// anything malformed.
ProfileTable profile_from_step_logs(const std::vector<std::string>& paths,
                                    const ModelConfig& model,
                                    double host_kv_bytes_per_s = 46e9);

}  // namespace paceline::sim
