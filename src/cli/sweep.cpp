#include "cli/sweep.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "base/error.h"
#include "bench/report_html.h"
#include "bench/sweep_manifest.h"
#include "cli/bench.h"
#include "cli/report.h"
#include "cli/sim.h"
#include "cli/sweep_slurm.h"

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

// The points of one variant, each listed in the manifest once it has written its files.
int run_variant(const SweepOptions& o, const SweepVariant& variant,
                const SweepPointRunner& run_point, bench::SweepManifest& manifest) {
  namespace fs = std::filesystem;
  for (int conc : o.concurrencies) {
    const std::string name =
        variant.dir.empty() ? sweep_point_dir(conc) : variant.dir + "/" + sweep_point_dir(conc);
    const std::string run_dir = (fs::path(o.out) / name).string();
    std::fprintf(stderr, "sweep: concurrency %d%s%s -> %s\n", conc, variant.dir.empty() ? "" : ", ",
                 variant.dir.c_str(), run_dir.c_str());
    const SweepPoint outcome = run_point(conc, run_dir);
    // A failed or cancelled point that still wrote its files is listed: its row says why.
    if (fs::exists(fs::path(run_dir) / "summary.json")) {
      if (!fs::exists(fs::path(run_dir) / "report.html")) bench::write_report_html(run_dir);
      manifest.runs.push_back({name, conc, ""});
      bench::write_sweep_manifest(o.out, manifest);
    }
    if (outcome != SweepPoint::kDone) return outcome == SweepPoint::kCancelled ? 130 : 1;
  }
  return 0;
}

// Whether a point's summary.json says its run is valid.
bool point_valid(const std::string& sweep_dir, const std::string& name) {
  std::ifstream in(std::filesystem::path(sweep_dir) / name / "summary.json");
  nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  return j.is_object() && j.value("valid", false);
}

}  // namespace

std::string sweep_point_dir(int concurrency) {
  return "conc-" + std::to_string(concurrency);
}

void add_sweep_options(CLI::App& cmd, SweepOptions& o) {
  cmd.add_option("--concurrency", o.concurrencies, "concurrencies to run, e.g. 1,4,16,48")
      ->delimiter(',')
      ->check(CLI::PositiveNumber);
  cmd.add_option("--out", o.out, "sweep directory: one run subdirectory per point")
      ->capture_default_str();
  cmd.add_flag("--sim", o.sim, "run each point in the simulator (`paceline sim` options)");
  cmd.add_option("--vary", o.vary,
                 "a knob axis FLAG=V1,V2 (e.g. prefill-decode-interval=0,4): every concurrency "
                 "runs once per value into OUT/FLAG-V/conc-N; repeat for more axes");
  cmd.add_flag("--slurm", o.slurm,
               "submit the points as one Slurm array job (sbatch) instead of running them here");
  cmd.add_flag("--dry-run", o.dry_run,
               "with --slurm: print the script and each point's argv and environment, submit "
               "nothing");
  cmd.add_option("--recipe", o.recipe,
                 "with --slurm: a JSON file of base arguments and per-point overrides "
                 "(docs/slurm.md)");
  cmd.add_option("--sbatch", o.sbatch,
                 "with --slurm: an sbatch option for the job, e.g. --sbatch=--partition=gpu; "
                 "repeat for more");
  cmd.add_option("--collect", o.collect,
                 "build the table and report of a Slurm sweep directory from its finished tasks");
  cmd.footer(
      "Every other option is passed to each point: those of `paceline bench`, or of "
      "`paceline sim` with --sim.");
  cmd.allow_extras();
  cmd.parse_complete_callback([&cmd, &o] { o.point_args = cmd.remaining(); });
}

std::vector<SweepVariant> sweep_variants(const SweepOptions& o) {
  std::vector<SweepVariant> variants = {{"", {}}};
  for (const std::string& axis : o.vary) {
    const size_t eq = axis.find('=');
    const std::string flag = axis.substr(0, eq);
    if (eq == std::string::npos || flag.empty() || flag.starts_with("-")) {
      fail("sweep: --vary '{}': expected FLAG=V1,V2,... with FLAG without its dashes", axis);
    }
    if (flag == "concurrency" || flag == "out") {
      fail("sweep: --vary '{}': the sweep sets --{} itself", axis, flag);
    }
    std::vector<std::string> values;
    std::string rest = axis.substr(eq + 1);
    for (size_t start = 0; start <= rest.size();) {
      size_t comma = std::min(rest.find(',', start), rest.size());
      std::string v = rest.substr(start, comma - start);
      if (v.empty() || v.find('/') != std::string::npos) {
        fail("sweep: --vary '{}': value {} is empty or holds a '/'", axis, values.size() + 1);
      }
      values.push_back(std::move(v));
      start = comma + 1;
    }
    std::vector<SweepVariant> next;
    for (const SweepVariant& base : variants) {
      for (const std::string& v : values) {
        SweepVariant variant = base;
        variant.dir = (base.dir.empty() ? "" : base.dir + "/") + flag + "-" + v;
        variant.args.push_back("--" + flag);
        variant.args.push_back(v);
        next.push_back(std::move(variant));
      }
    }
    variants = std::move(next);
  }
  return variants;
}

SweepPointRunner sweep_point_runner(const SweepOptions& o, const SweepVariant& variant) {
  std::vector<std::string> args = o.point_args;
  args.insert(args.end(), variant.args.begin(), variant.args.end());
  return o.sim ? sim_runner(args) : bench_runner(args);
}

int run_sweep(const SweepOptions& o, const SweepRunnerFactory& runner_for) {
  if (!o.collect.empty()) return run_sweep_collect(o.collect);
  if (o.slurm) return run_sweep_slurm(o);
  if (o.dry_run || !o.recipe.empty() || !o.sbatch.empty()) {
    fail("sweep: --dry-run, --recipe and --sbatch go with --slurm");
  }
  if (o.concurrencies.empty()) fail("sweep: --concurrency lists no points");
  const std::vector<SweepVariant> variants = sweep_variants(o);
  std::vector<SweepPointRunner> runners;
  for (const SweepVariant& v : variants) runners.push_back(runner_for(v));
  bench::SweepManifest manifest;
  manifest.settings = {{"concurrency", o.concurrencies},
                       {"simulated", o.sim},
                       {"point_args", o.point_args},
                       {"vary", o.vary}};
  int status = 0;
  for (size_t i = 0; i < variants.size() && status == 0; ++i) {
    status = run_variant(o, variants[i], runners[i], manifest);
  }
  if (!manifest.runs.empty()) report_sweep_dir(o.out);
  const bool any_valid = std::any_of(manifest.runs.begin(), manifest.runs.end(),
                                     [&o](const auto& run) { return point_valid(o.out, run.dir); });
  if (status == 0 && !any_valid) {
    std::fprintf(stderr, "sweep: error: every point is invalid (see each point's summary.json)\n");
    return 1;
  }
  return status;
}

}  // namespace paceline
