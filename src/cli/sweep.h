#pragma once
// `paceline sweep --concurrency 1,4,16,48 --out DIR [bench options]`: one `paceline bench` run
// per concurrency into DIR/conc-N, sweep.json listing them, then the sweep's table on stdout and
// its report (sweep.md, report.html with the Pareto chart). With `--sim` each point is a
// `paceline sim` run instead, and the other options are sim's. `--vary FLAG=V1,V2` adds a knob
// axis: every concurrency runs once per value (with `--FLAG Vi`) into DIR/FLAG-Vi/conc-N; several
// `--vary` multiply; the sweep's one table and Pareto chart hold every point.
#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

namespace paceline {

struct SweepOptions {
  std::vector<int> concurrencies;
  std::string out = "sweep";
  bool sim = false;
  // Knob axes, each "FLAG=V1,V2,..." (FLAG without its dashes), e.g. "prefill-decode-interval=0,4".
  std::vector<std::string> vary;
  // Every other argument, handed to each point as `paceline bench` (or `paceline sim`) options.
  std::vector<std::string> point_args;
  // Slurm (sweep_slurm.h): submit the points as an array job, or print it; collect one.
  bool slurm = false;
  bool dry_run = false;
  std::string recipe;
  std::vector<std::string> sbatch;  // extra #SBATCH options
  std::string collect;              // a sweep directory a Slurm job wrote into
};

// How one point ended.
enum class SweepPoint {
  kDone,       // its run directory is complete
  kCancelled,  // Ctrl-C: the sweep stops after it
  kFailed,     // a failed warmup: the sweep stops after it
};

// One combination of the --vary values: the arguments it adds to every point and the directory
// (relative to the sweep's) that holds its points; {"", {}} without --vary.
struct SweepVariant {
  std::string dir;
  std::vector<std::string> args;
};

// Every combination of the --vary axes, first axis slowest. A malformed axis is an error naming it.
std::vector<SweepVariant> sweep_variants(const SweepOptions& options);

// Runs one point: leaves a run directory (summary.json, records.jsonl, report.html) at `run_dir`.
using SweepPointRunner = std::function<SweepPoint(int concurrency, const std::string& run_dir)>;

void add_sweep_options(CLI::App& cmd, SweepOptions& options);

// The runner for one variant of `paceline sweep`: parses `point_args` plus the variant's arguments
// as sim's options with --sim, else as bench's.
SweepPointRunner sweep_point_runner(const SweepOptions& options, const SweepVariant& variant);
using SweepRunnerFactory = std::function<SweepPointRunner(const SweepVariant&)>;

// Makes every variant's runner first (so a bad flag fails before the first point runs), then runs
// every variant's points in the order given, rewriting sweep.json after each (a sweep cut short
// still has a report of what ran), then writes and prints the sweep report. A point that wrote
// summary.json is listed even when it failed or was cancelled (its row says so). Exit status: 0,
// 1 when a point failed, 130 when one was cancelled. With --slurm or --collect it does those
// instead (sweep_slurm.h).
int run_sweep(const SweepOptions& options, const SweepRunnerFactory& runner_for);

// The run directory's name for one point: "conc-16" (what `paceline sim` uses too).
std::string sweep_point_dir(int concurrency);

}  // namespace paceline
