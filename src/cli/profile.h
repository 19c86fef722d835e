#pragma once
// `paceline profile`: measures the step-time table the simulator's cost model is fitted to, on a
// real executor (the CPU one; CUDA when it exists), with dummy weights. `--roofline h200` writes
// the analytic profile of a named GPU instead, every figure and assumption in the file.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "sim/profiler.h"

namespace paceline {

struct ProfileOptions {
  std::string model = "tiny";
  std::string device = "cpu";
  std::string kv_cache_memory = "256M";  // `paceline serve --device cpu`'s default
  int64_t block_size = 16;
  int threads = 0;  // 0: all cores
  uint64_t seed = 0;
  std::string out;       // default: profile-<model>-<device>.json
  std::string roofline;  // a GPU name: write its roofline profile instead of measuring
  sim::ProfileGrid grid;
  std::vector<std::string> from_step_logs;  // fit to a server's steps instead of measuring
  double host_kv_bandwidth = 46;  // GB/s: host-tier copies taken out of logged steps' time
};

void add_profile_options(CLI::App& cmd, ProfileOptions& options);
int run_profile(const ProfileOptions& options);

}  // namespace paceline
