#include "cli/paced_null.h"

#include "base/error.h"
#include "base/log.h"
#include "exec/null_executor.h"
#include "sim/paced_executor.h"
#include "sim/sim_profile.h"

namespace paceline {

void add_pace_options(CLI::App& cmd, PaceOptions& o) {
  cmd.add_option("--pace-profile", o.profile,
                 "null device only: hold each step for the time this simulator profile (a GPU "
                 "name such as h200, or a profile file) predicts, and size the KV cache and host "
                 "tier as paceline sim does from it: the simulator's engine in real time");
  cmd.add_option("--pace-host-kv-bandwidth", o.host_kv_bandwidth,
                 "with --pace-profile: GB/s of each host<->GPU copy stream (paceline sim's "
                 "--host-kv-bandwidth)")
      ->capture_default_str();
}

std::unique_ptr<Executor> make_paced_null_executor(const ModelOptions& o, const LoadedModel& m,
                                                   const PaceOptions& pace, const Clock& clock) {
  if (o.device != "null") fail("--pace-profile paces the null executor: pass --device null");
  if (!(pace.host_kv_bandwidth > 0)) {
    fail("--pace-host-kv-bandwidth must be more than 0 GB/s (got {})", pace.host_kv_bandwidth);
  }
  if (!(o.kv_offloading_size >= 0)) {
    fail("--kv-offloading-size must be 0 or more GiB (got {})", o.kv_offloading_size);
  }
  const int64_t element_bytes = wants_fp8_kv_cache(o)                          ? 1
                                : o.kv_cache_dtype == "auto"                   ? 0
                                                                               : 2;
  sim::SimProfile profile =
      sim::load_sim_profile(pace.profile, m.config, o.gpu_memory_utilization, element_bytes);
  // Sized as paceline sim sizes its engine (cli/sim.cpp): blocks of the profile's KV element,
  // the GPU's memory from the profile unless --kv-cache-memory says otherwise, and a host tier
  // of the simulated host (the null executor takes no memory, so none is checked).
  const int64_t block_bytes = m.config.kv_bytes_per_token(profile.kv_element_bytes) * o.block_size;
  const int64_t kv_bytes = o.kv_cache_memory.empty()
                               ? profile.kv_cache_bytes
                               : parse_byte_size(o.kv_cache_memory, "--kv-cache-memory");
  const KvCacheShape kv{kv_bytes / block_bytes, o.block_size};
  if (kv.num_blocks < 1) fail("--kv-cache-memory: {} bytes hold no KV block of {} bytes", kv_bytes, block_bytes);
  const int64_t host_blocks = static_cast<int64_t>(o.kv_offloading_size * 1073741824.0) / block_bytes;
  if (o.kv_offloading_size > 0 && host_blocks < 1) {
    fail("--kv-offloading-size {} GiB holds no KV block of {} bytes", o.kv_offloading_size, block_bytes);
  }
  spdlog::info("null executor paced by {}: {} KV blocks of {} tokens, {} host blocks, copies at {} GB/s",
               profile.cost->describe(), kv.num_blocks, kv.block_size, host_blocks,
               pace.host_kv_bandwidth);
  auto null = std::make_unique<NullExecutor>(kv, m.config.vocab_size, m.config.eos_token_ids, host_blocks);
  return std::make_unique<sim::PacedExecutor>(
      std::move(null), std::move(profile.cost),
      sim::KvTransferCost{block_bytes, pace.host_kv_bandwidth * 1e9}, clock,
      sim::sleep_until_steady_ns);
}

}  // namespace paceline
