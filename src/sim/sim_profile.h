#pragma once
// What `--profile` names: the analytic roofline of a named GPU ("h200", the default), or a
// profile file, either a GPU's roofline figures or a table measured by `paceline profile`. Either
// way it gives the cost model and the KV memory the simulated engine has.
#include <cstdint>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "model/config.h"
#include "sim/cost_model.h"
#include "sim/roofline_profile.h"

namespace paceline::sim {

struct SimProfile {
  std::string name;  // as given on the command line
  std::string type;  // "roofline" or "measured"
  std::unique_ptr<CostModel> cost;
  // KV memory of the simulated engine unless --kv-cache-memory says otherwise: the GPU's memory
  // times the utilization minus the weights, or the measured executor's KV memory.
  int64_t kv_cache_bytes = 0;
  int64_t kv_element_bytes = 2;
  // GPUs one replica spans (--tensor-parallel-size): a roofline prices each step per GPU plus the
  // all-reduces; a measured profile must have been measured at this size.
  int tensor_parallel_size = 1;
  nlohmann::json json;  // the profile itself, for the run's summary
};

// The roofline profile file of a GPU: {"type": "roofline", "gpu": {...}}.
nlohmann::json roofline_profile_json(const GpuSpec& gpu);

// Resolves `name_or_path`: a named GPU, a file, or a shipped profile configs/profiles/<name>.json.
// A measured profile must have been measured on `model`. Throws paceline::Error.
// kv_element_bytes > 0 sets a roofline profile's KV element size (--kv-cache-dtype: its
// capacity and the bytes attention reads); a measured profile must have been measured with it.
// tensor_parallel_size N: a replica of N GPUs (docs/tensor-parallel.md). A roofline splits each
// step over them and adds the all-reduces, its KV memory is N GPUs' worth; a measured profile
// is refused unless it records the same size (absent: 1, every profile measured so far).
SimProfile load_sim_profile(const std::string& name_or_path, const ModelConfig& model,
                            double gpu_memory_utilization, int64_t kv_element_bytes = 0,
                            int tensor_parallel_size = 1);

}  // namespace paceline::sim
