#include "cli/profile.h"

#include <cstdio>
#include <fstream>
#include <thread>

#include "base/error.h"
#include "base/log.h"
#include "cli/model_options.h"
#include "exec/cpu/cpu_executor.h"
#include "model/config.h"
#include "model/weights.h"
#include "bench/stats.h"
#include "sim/profile_table.h"
#include "sim/roofline_profile.h"
#include "sim/sim_profile.h"
#include "sim/step_log_profile.h"

namespace paceline {

namespace {

void write_json(const std::string& path, const nlohmann::json& j) {
  std::ofstream out(path, std::ios::binary);
  if (!out) fail("{}: cannot write", path);
  out << j.dump(2) << '\n';
  if (!out) fail("{}: write failed", path);
}

void print_fit(const char* kind, const sim::KindFit& f) {
  if (f.empty()) return;
  std::printf(
      "  %-7s %3lld points, fit rms error %.1f%%: %.3f us per KV position, %.6f us per "
      "attention pair, %.2f us per logit row\n",
      kind, static_cast<long long>(f.num_points), f.rms_relative_error * 100, f.per_context_us,
      f.per_attention_us, f.per_logit_row_us);
}

// How a step log's steps scatter around the fit, which `paceline sim` replays (step_noise.h): the
// spread of measured over predicted time, and how much a step's ratio predicts the next one's of
// its kind (near 0: independent jitter, or a shape the fit misses; near 1: the machine drifting).
void print_scatter(const char* kind, const sim::StepTimeSeries* s) {
  if (s == nullptr || s->ratio.size() < 3) return;
  const std::vector<double>& r = s->ratio;
  const double m = bench::mean(r);
  double num = 0, den = 0;
  for (size_t i = 0; i < r.size(); ++i) {
    den += (r[i] - m) * (r[i] - m);
    if (i + 1 < r.size()) num += (r[i] - m) * (r[i + 1] - m);
  }
  std::printf("  %-7s step time over the fit: p10 %.2f, p50 %.2f, p90 %.2f, mean %.2f; "
              "correlation with the next step %.2f\n",
              kind, bench::percentile(r, 10), bench::percentile(r, 50), bench::percentile(r, 90), m,
              den > 0 ? num / den : 0.0);
}

void report_fit(const sim::ProfileTable& table, const std::string& out) {
  const sim::TableFit fit = sim::fit_profile_table(table);
  std::printf("profile of %s on %s: %zu points -> %s\n", table.model.c_str(),
              table.executor.c_str(), table.points.size(), out.c_str());
  print_fit("prefill", fit.prefill);
  print_fit("decode", fit.decode);
  print_fit("mixed", fit.mixed);
  if (!table.time_ordered) return;
  const sim::TableCostModel model(table);
  print_scatter("prefill", model.step_time_series(ForwardKind::kPrefill));
  print_scatter("decode", model.step_time_series(ForwardKind::kDecode));
  if (!fit.mixed.empty()) print_scatter("mixed", model.step_time_series(ForwardKind::kMixed));
}

int profile_from_logs(const ProfileOptions& o) {
  const ModelConfig config = model_config_load(o.model);
  const sim::ProfileTable table = sim::profile_from_step_logs(o.from_step_logs, config,
                                                                o.host_kv_bandwidth * 1e9);
  const std::string out =
      o.out.empty() ? fmt::format("profile-{}-{}-served.json", config.name, table.device) : o.out;
  write_json(out, sim::profile_table_to_json(table));
  report_fit(table, out);
  return 0;
}

}  // namespace

void add_profile_options(CLI::App& cmd, ProfileOptions& o) {
  cmd.add_option("--model", o.model, "config.json, Hugging Face folder, or a shipped name")
      ->capture_default_str();
  cmd.add_option("--device", o.device, "executor to measure")
      ->check(CLI::IsMember({"cpu"}))
      ->capture_default_str();
  cmd.add_option("--kv-cache-memory", o.kv_cache_memory, "KV cache bytes of the executor")
      ->capture_default_str();
  cmd.add_option("--block-size", o.block_size, "tokens per KV block")->capture_default_str();
  cmd.add_option("--threads", o.threads, "CPU threads (0: all cores)")->capture_default_str();
  cmd.add_option("--seed", o.seed, "dummy weights seed")->capture_default_str();
  cmd.add_option("--out", o.out, "profile file (default: profile-<model>-<device>.json)");
  cmd.add_option("--roofline", o.roofline,
                 "write the analytic profile of this GPU (h200) instead of measuring");
  cmd.add_option("--from-step-log", o.from_step_logs,
                 "fit the profile to the steps of `paceline serve --step-log` files instead of "
                 "measuring isolated forwards (repeat for several runs)");
  cmd.add_option("--host-kv-bandwidth", o.host_kv_bandwidth,
                 "GB/s of the host KV tier's copies, taken out of the time of logged steps that "
                 "made them (--from-step-log), as paceline sim charges them")
      ->capture_default_str();
  cmd.add_option("--repeats", o.grid.repeats, "timed runs per point (median kept)")
      ->capture_default_str();
  cmd.add_option("--prefill-tokens", o.grid.prefill_tokens, "prefill sizes")->delimiter(',');
  cmd.add_option("--prefill-prefix", o.grid.prefill_prefix, "cached positions before a prefill")
      ->delimiter(',');
  cmd.add_option("--prefill-batch", o.grid.prefill_batch, "sequences a prefill is split over")
      ->delimiter(',');
  cmd.add_option("--decode-batch", o.grid.decode_batch, "decode batch sizes")->delimiter(',');
  cmd.add_option("--decode-context", o.grid.decode_context, "decode context lengths")
      ->delimiter(',');
}

int run_profile(const ProfileOptions& o) {
  if (!o.roofline.empty()) {
    const std::string out = o.out.empty() ? o.roofline + ".json" : o.out;
    write_json(out, sim::roofline_profile_json(sim::gpu_spec_named(o.roofline)));
    std::printf("roofline profile of %s -> %s\n", o.roofline.c_str(), out.c_str());
    return 0;
  }
  if (!o.from_step_logs.empty()) return profile_from_logs(o);
  if (o.block_size < 1 || o.block_size > 1024)
    fail("--block-size: {} is out of range", o.block_size);
  const ModelConfig config = model_config_load(o.model);
  const std::unique_ptr<Weights> weights = make_dummy_weights(config, o.seed);
  const int64_t kv_bytes = parse_byte_size(o.kv_cache_memory, "--kv-cache-memory");
  const int64_t element_bytes = sizeof(float);  // the CPU executor keeps KV in float32
  const KvCacheShape kv{kv_bytes / (config.kv_bytes_per_token(element_bytes) * o.block_size),
                        o.block_size};
  if (kv.num_blocks < 1) fail("--kv-cache-memory: {} bytes hold no KV block", kv_bytes);
  const int threads = o.threads > 0
                          ? o.threads
                          : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  CpuExecutor executor(config, *weights, kv, threads);

  sim::ProfileTable table;
  table.device = o.device;
  table.model = config.name;
  table.executor = fmt::format("cpu, {} threads, float32", threads);
  table.kv_cache_bytes = kv_bytes;
  table.kv_element_bytes = element_bytes;
  table.block_size = o.block_size;
  table.repeats = o.grid.repeats;
  table.notes = {
      "measured by paceline profile: the steady clock around Executor::execute, "
      "median of the repeats after one warm-up run, dummy weights"};
  table.points = sim::measure_profile(executor, o.grid, [](const sim::ProfilePoint& p) {
    spdlog::info("profile: {} batch {} tokens {} context {}: {:.1f} us", forward_kind_name(p.kind), p.batch,
                 p.tokens, p.context, p.time_us);
  });
  const std::string out =
      o.out.empty() ? fmt::format("profile-{}-{}.json", config.name, o.device) : o.out;
  write_json(out, sim::profile_table_to_json(table));
  report_fit(table, out);
  return 0;
}

}  // namespace paceline
