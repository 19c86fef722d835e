#pragma once
// A sweep as one Slurm array job: one task per point, each running its own `paceline sim` (or
// `paceline serve` and `paceline bench`) into the point's run directory. `paceline sweep --slurm`
// writes the sbatch script and slurm.json, the manifest that names every point with its argv and
// environment; `paceline sweep --collect` reads the manifest back and says, point by point, what
// finished, what failed and what never wrote its summary.
//
// slurm.json:
//   {"job_id": "1234" | null, "paceline": "/abs/paceline", "sweep_dir": "/abs/out",
//    "server": [serve args] | null, "sbatch": [extra #SBATCH lines],
//    "points": [{"name": "conc-4", "concurrency": 4, "argv": ["sim", ...], "env": {"K": "V"}}]}
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace paceline::bench {

struct SlurmPoint {
  std::string name;  // its run directory, relative to the sweep directory
  int concurrency = 0;
  std::vector<std::string> argv;  // paceline's arguments, the subcommand first
  std::map<std::string, std::string> env;
};

struct SlurmJob {
  std::string paceline;   // the binary every task runs (absolute)
  std::string sweep_dir;  // absolute
  // `paceline serve` arguments: each task starts its own server on 127.0.0.1:server_port first
  // and benches it (empty for simulated sweeps, whose points need no server).
  std::optional<std::vector<std::string>> server;
  int server_port = 8000;
  std::vector<std::string> sbatch;  // extra options, one #SBATCH line each (e.g. "--partition=gpu")
  std::vector<SlurmPoint> points;
  std::optional<std::string> job_id;  // once submitted
};

nlohmann::json slurm_job_json(const SlurmJob& job);
// Fails with a message naming `path` and the field when the manifest is malformed.
SlurmJob slurm_job_from_json(const nlohmann::json& j, const std::string& path);

// The sbatch script: an array of one task per point; task i exports point i's environment, runs
// it, and writes its exit status to <run dir>/exit_status, so that a failed task is told apart
// from one that never ran. Every value is shell-quoted.
std::string slurm_script(const SlurmJob& job);

// Single-quoted for a POSIX shell: abc -> 'abc', it's -> 'it'\''s'.
std::string shell_quote(const std::string& word);

// "sbatch --parsable" answers "1234" or "1234;cluster": the job id. Empty when there is none.
std::string parse_sbatch_job_id(const std::string& output);

enum class SlurmPointState { kDone, kFailed, kMissing };

struct SlurmPointStatus {
  const SlurmPoint* point = nullptr;
  SlurmPointState state = SlurmPointState::kMissing;
  bool has_summary = false;  // its row can be written (a failed task may still have one)
  std::string detail;  // why, for failed and missing points, naming the task's log
};

// What each point left in the sweep directory: a summary.json and no failed exit_status (done), a
// non-zero exit_status or a zero one without summary (failed), or neither (missing: never ran,
// still running, or killed before it could say).
std::vector<SlurmPointStatus> slurm_point_status(const SlurmJob& job);

}  // namespace paceline::bench
