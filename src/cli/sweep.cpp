#include "cli/sweep.h"

#include <cstdio>
#include <filesystem>

#include "base/error.h"
#include "bench/report_html.h"
#include "bench/sweep_manifest.h"
#include "cli/bench.h"
#include "cli/report.h"
#include "cli/sim.h"

namespace paceline {

namespace {

// Parses the sweep's pass-through arguments with a subcommand's own option adder.
template <typename Options, typename AddOptions>
Options parse_point_options(const char* name, const std::vector<std::string>& args,
                            AddOptions add) {
  CLI::App app{std::string("paceline sweep: options of every ") + name + " point"};
  Options options;
  add(app, options);
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes them reversed
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    fail("sweep: {} options: {}", name, e.what());
  }
  return options;
}

SweepPointRunner sim_runner(const std::vector<std::string>& args) {
  SimOptions sim = parse_point_options<SimOptions>("sim", args, add_sim_options);
  return [sim](int concurrency, const std::string& run_dir) {
    run_sim_point(sim, concurrency, run_dir);
    return SweepPoint::kDone;
  };
}

SweepPointRunner bench_runner(const std::vector<std::string>& args) {
  BenchOptions bench = parse_point_options<BenchOptions>(
      "bench", args, [](CLI::App& app, BenchOptions& o) { add_bench_options(app, o, false); });
  return [bench](int concurrency, const std::string& run_dir) {
    BenchResult r = run_bench_point(bench, concurrency, run_dir);
    if (r.abort_reason) {
      std::fprintf(stderr, "sweep: concurrency %d: %s\n", concurrency, r.abort_reason->c_str());
      return SweepPoint::kFailed;
    }
    return r.cancelled ? SweepPoint::kCancelled : SweepPoint::kDone;
  };
}

}  // namespace

std::string sweep_point_dir(int concurrency) {
  return "conc-" + std::to_string(concurrency);
}

void add_sweep_options(CLI::App& cmd, SweepOptions& o) {
  cmd.add_option("--concurrency", o.concurrencies, "concurrencies to run, e.g. 1,4,16,48")
      ->required()
      ->delimiter(',')
      ->check(CLI::PositiveNumber);
  cmd.add_option("--out", o.out, "sweep directory: one run subdirectory per point")
      ->capture_default_str();
  cmd.add_flag("--sim", o.sim, "run each point in the simulator (`paceline sim` options)");
  cmd.footer(
      "Every other option is passed to each point: those of `paceline bench`, or of "
      "`paceline sim` with --sim.");
  cmd.allow_extras();
  cmd.parse_complete_callback([&cmd, &o] { o.point_args = cmd.remaining(); });
}

SweepPointRunner sweep_point_runner(const SweepOptions& o) {
  return o.sim ? sim_runner(o.point_args) : bench_runner(o.point_args);
}

int run_sweep(const SweepOptions& o, const SweepPointRunner& run_point) {
  if (o.concurrencies.empty()) fail("sweep: --concurrency lists no points");
  bench::SweepManifest manifest;
  manifest.settings = {
      {"concurrency", o.concurrencies}, {"simulated", o.sim}, {"point_args", o.point_args}};
  int status = 0;
  for (int conc : o.concurrencies) {
    std::string name = sweep_point_dir(conc);
    std::string run_dir = (std::filesystem::path(o.out) / name).string();
    std::fprintf(stderr, "sweep: concurrency %d -> %s\n", conc, run_dir.c_str());
    SweepPoint outcome = run_point(conc, run_dir);
    // A failed or cancelled point that still wrote its files is listed: its row says why.
    if (std::filesystem::exists(std::filesystem::path(run_dir) / "summary.json")) {
      if (!std::filesystem::exists(std::filesystem::path(run_dir) / "report.html")) {
        bench::write_report_html(run_dir);
      }
      manifest.runs.push_back({name, conc, ""});
      bench::write_sweep_manifest(o.out, manifest);
    }
    if (outcome != SweepPoint::kDone) {
      status = outcome == SweepPoint::kCancelled ? 130 : 1;
      break;
    }
  }
  if (!manifest.runs.empty()) report_sweep_dir(o.out);
  return status;
}

}  // namespace paceline
