#pragma once
// `paceline sweep --slurm`: the sweep's points as one Slurm array job (bench/slurm_job.h), from
// the command line's concurrencies and --vary axes and, with --recipe, a JSON file of a base and
// per-point overrides. `--dry-run` prints the script and every point's argv and environment
// instead of submitting; `paceline sweep --collect DIR` builds the sweep's table, Pareto and
// report from what the tasks left, naming every point that failed or is missing.
//
// A recipe (docs/slurm.md):
//   {"sim": true, "concurrency": [1, 16], "base": ["--traces", "t/", "--duration", "600"],
//    "env": {"K": "V"}, "server": ["--model", "qwen3-8b", "--device", "cuda"],
//    "sbatch": ["--partition=gpu", "--gres=gpu:1"],
//    "points": [{"name": "interval-4", "args": ["--prefill-decode-interval", "4"],
//                "env": {"ATOM_...": "1"}}]}
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bench/slurm_job.h"
#include "cli/sweep.h"

namespace paceline {

struct SweepRecipePoint {
  std::string name;
  std::vector<std::string> args;
  std::map<std::string, std::string> env;
};

struct SweepRecipe {
  std::optional<bool> sim;
  std::vector<int> concurrency;
  std::vector<std::string> base;
  std::map<std::string, std::string> env;
  std::optional<std::vector<std::string>> server;
  std::vector<std::string> sbatch;
  std::vector<SweepRecipePoint> points;
};

// Fails naming the file and the field for anything malformed.
SweepRecipe load_sweep_recipe(const std::string& path);

// Every point of the sweep (recipe points, times --vary values, times concurrencies), each
// parsed with sim's or bench's options first so that a bad flag fails before anything is
// submitted. `paceline` is the binary the tasks run.
bench::SlurmJob plan_slurm_job(const SweepOptions& options, const SweepRecipe& recipe,
                               const std::string& paceline);

// Writes the job's files and submits it (or, with --dry-run, prints them). Exit status 0.
int run_sweep_slurm(const SweepOptions& options);
// Exit status: 0 when every point is done, 1 when one failed or is missing (the rest is still
// collected and reported).
int run_sweep_collect(const std::string& sweep_dir);

}  // namespace paceline
