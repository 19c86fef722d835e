// `paceline sweep --slurm` and `--collect` as a user runs them, against a stand-in for sbatch on
// the PATH that runs every array task here, in order, as Slurm would on its nodes (the script and
// the tasks are the real ones; only the scheduler is not). Points are short simulated runs.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "bench_process.h"

namespace paceline::testing {
namespace {

namespace fs = std::filesystem;

// Runs each task of the array the script declares, its output where #SBATCH --output says.
constexpr const char* kFakeSbatch = R"(#!/bin/bash
script="${@: -1}"
last=$(sed -n 's/^#SBATCH --array=0-\([0-9]*\)$/\1/p' "$script")
out=$(sed -n 's/^#SBATCH --output=\(.*\)$/\1/p' "$script")
for i in $(seq 0 "$last"); do
  SLURM_ARRAY_TASK_ID=$i bash "$script" >"${out//%a/$i}" 2>&1
done
echo "4242;test-cluster"
)";

constexpr const char* kRejectingSbatch = R"(#!/bin/bash
echo "sbatch: error: Batch job submission failed: Invalid partition name specified" >&2
exit 1
)";

class SweepSlurm : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("paceline-sweep-slurm-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "bin");
    old_path_ = std::getenv("PATH") ? std::getenv("PATH") : "";
  }
  void TearDown() override {
    ::setenv("PATH", old_path_.c_str(), 1);
    if (!HasFailure()) fs::remove_all(dir_);
  }

  // Puts `script` on the PATH as sbatch (before everything else).
  void install_sbatch(const char* script) {
    const fs::path p = dir_ / "bin" / "sbatch";
    std::ofstream(p) << script;
    fs::permissions(p, fs::perms::owner_all);
    ::setenv("PATH", ((dir_ / "bin").string() + ":" + old_path_).c_str(), 1);
  }

  fs::path write_recipe(const std::string& text) const {
    const fs::path p = dir_ / "recipe.json";
    std::ofstream(p) << text;
    return p;
  }

  // Two simulated points, the second with the delayer on through its environment.
  std::string recipe(const std::string& second_traces = "") const {
    const std::string traces = PACELINE_SOURCE_DIR "/../shared/traces/agentx";
    return R"({"sim": true,
      "base": ["--traces", ")" + traces + R"(", "--duration", "20", "--isl-scale", "0.05",
               "--osl-scale", "0.05", "--warmup-requests-per-lane", "0"],
      "env": {"PACELINE_SWEEP_TEST": "base"},
      "points": [{"name": "off"},
                 {"name": "on", "args": [)" +
           (second_traces.empty() ? "" : R"("--traces", ")" + second_traces + R"(")") +
           R"(], "env": {"ATOM_ENABLE_PREFILL_DELAYER": "1", "ATOM_PREFILL_DECODE_INTERVAL": "4"}}]})";
  }

  ProcessResult sweep(std::vector<std::string> args) {
    args.insert(args.begin(), "sweep");
    return run_paceline(args, dir_ / "stdout.txt");
  }

  fs::path dir_;
  std::string old_path_;
};

TEST_F(SweepSlurm, DryRunPrintsTheScriptAndEveryPointsArgvAndEnvironment) {
  const fs::path r = write_recipe(recipe());
  ProcessResult p = sweep({"--slurm", "--dry-run", "--recipe", r.string(), "--concurrency",
                           "1,2", "--out", (dir_ / "out").string(), "--sbatch=--partition=gpu"});
  ASSERT_EQ(p.status, 0) << p.errors;
  EXPECT_NE(p.output.find("#SBATCH --array=0-3\n"), std::string::npos) << p.output;
  EXPECT_NE(p.output.find("#SBATCH --partition=gpu\n"), std::string::npos) << p.output;
  EXPECT_NE(p.output.find("# point 3: on/conc-2\n"), std::string::npos) << p.output;
  EXPECT_NE(p.output.find("#   env ATOM_ENABLE_PREFILL_DELAYER=1\n"), std::string::npos);
  EXPECT_NE(p.output.find("#   env PACELINE_SWEEP_TEST=base\n"), std::string::npos);
  EXPECT_NE(p.output.find("'--concurrency' '2' '--out' '" + (dir_ / "out" / "on" / "conc-2").string()),
            std::string::npos)
      << p.output;
  EXPECT_FALSE(fs::exists(dir_ / "out"));  // nothing written, nothing submitted
}

// Bench points start their own server, each task on its own port; a point's override replaces
// the base's value instead of passing the flag twice.
TEST_F(SweepSlurm, BenchPointsGetTheirServerAndOverridesReplaceTheBase) {
  const fs::path r = write_recipe(R"({"base": ["--traces", "t", "--duration", "600"],
      "server": ["--model", "qwen3-8b", "--device", "cuda"],
      "points": [{"name": "short", "args": ["--duration", "60"]}]})");
  ProcessResult p = sweep({"--slurm", "--dry-run", "--recipe", r.string(), "--concurrency",
                           "1,4", "--out", (dir_ / "out").string()});
  ASSERT_EQ(p.status, 0) << p.errors;
  EXPECT_NE(p.output.find("SERVER_ARGS=( '--model' 'qwen3-8b' '--device' 'cuda' )"),
            std::string::npos)
      << p.output;
  EXPECT_NE(p.output.find("with_server 8001 'bench' '--traces' 't' '--duration' '60' "
                          "'--concurrency' '4'"),
            std::string::npos)
      << p.output;
  EXPECT_NE(p.output.find("'--url' 'http://127.0.0.1:8001'"), std::string::npos) << p.output;
  EXPECT_EQ(p.output.find("'600'"), std::string::npos) << p.output;
}

TEST_F(SweepSlurm, BadInputIsAClearErrorBeforeAnythingIsSubmitted) {
  ::setenv("PATH", "/nonexistent", 1);
  const fs::path r = write_recipe(recipe());
  ProcessResult p = sweep({"--slurm", "--recipe", r.string(), "--concurrency", "1", "--out",
                           (dir_ / "out").string()});
  EXPECT_EQ(p.status, 1);
  EXPECT_NE(p.errors.find("sbatch is not on the PATH"), std::string::npos) << p.errors;

  install_sbatch(kRejectingSbatch);
  p = sweep({"--slurm", "--recipe", r.string(), "--concurrency", "1", "--out",
             (dir_ / "out").string()});
  EXPECT_EQ(p.status, 1);
  EXPECT_NE(p.errors.find("sbatch rejected"), std::string::npos) << p.errors;
  EXPECT_NE(p.errors.find("Invalid partition name"), std::string::npos) << p.errors;

  const fs::path bad = write_recipe(
      R"({"sim": true, "base": ["--traces", "t"], "points": [{"name": "x", "args": ["--no-such-flag"]}]})");
  p = sweep({"--slurm", "--dry-run", "--recipe", bad.string(), "--concurrency", "1"});
  EXPECT_EQ(p.status, 1);
  EXPECT_NE(p.errors.find("point x"), std::string::npos) << p.errors;
  EXPECT_NE(p.errors.find("--no-such-flag"), std::string::npos) << p.errors;

  const fs::path typo = write_recipe(R"({"sim": true, "pionts": []})");
  p = sweep({"--slurm", "--dry-run", "--recipe", typo.string(), "--concurrency", "1"});
  EXPECT_EQ(p.status, 1);
  EXPECT_NE(p.errors.find("unknown field \"pionts\""), std::string::npos) << p.errors;
}

TEST_F(SweepSlurm, SubmittedTasksRunAndCollectBuildsTheSweepReport) {
  install_sbatch(kFakeSbatch);
  const fs::path r = write_recipe(recipe());
  const fs::path out = dir_ / "out";
  ProcessResult p = sweep({"--slurm", "--recipe", r.string(), "--concurrency", "1,2", "--out",
                           out.string()});
  ASSERT_EQ(p.status, 0) << p.errors;
  EXPECT_NE(p.errors.find("submitted job 4242"), std::string::npos) << p.errors;
  const nlohmann::json manifest = read_json(out / "slurm.json");
  EXPECT_EQ(manifest["job_id"], "4242");
  EXPECT_EQ(manifest["points"].size(), 4u);
  // The environment reached the task: the delayer is on in the "on" points only.
  EXPECT_EQ(read_json(out / "on" / "conc-2" / "summary.json")["settings"]["delayer"], "on");
  EXPECT_EQ(read_json(out / "off" / "conc-2" / "summary.json")["settings"]["delayer"], "off");

  p = sweep({"--collect", out.string()});
  ASSERT_EQ(p.status, 0) << p.errors;
  EXPECT_NE(p.output.find("| CONC |"), std::string::npos) << p.output;
  EXPECT_TRUE(fs::exists(out / "sweep.json"));
  EXPECT_TRUE(fs::exists(out / "report.html"));
  EXPECT_EQ(read_json(out / "sweep.json")["runs"].size(), 4u);
}

TEST_F(SweepSlurm, CollectNamesFailedAndMissingPointsAndReportsTheRest) {
  install_sbatch(kFakeSbatch);
  const fs::path r = write_recipe(recipe("/nonexistent/traces"));
  const fs::path out = dir_ / "out";
  ProcessResult p = sweep({"--slurm", "--recipe", r.string(), "--concurrency", "1,2", "--out",
                           out.string()});
  ASSERT_EQ(p.status, 0) << p.errors;
  fs::remove_all(out / "off" / "conc-2");  // as if its task never ran
  p = sweep({"--collect", out.string()});
  EXPECT_EQ(p.status, 1) << p.errors;
  EXPECT_NE(p.errors.find("point on/conc-1: failed: task 2 failed with exit status 1"),
            std::string::npos)
      << p.errors;
  EXPECT_NE(p.errors.find("slurm/task-2.out"), std::string::npos) << p.errors;
  EXPECT_NE(p.errors.find("point off/conc-2: missing"), std::string::npos) << p.errors;
  EXPECT_NE(p.errors.find("3 of 4 points failed or are missing"), std::string::npos) << p.errors;
  // What finished is still reported.
  EXPECT_EQ(read_json(out / "sweep.json")["runs"].size(), 1u);
  EXPECT_TRUE(fs::exists(out / "report.html"));
  // The task's own log says why.
  EXPECT_NE(read_text(out / "slurm" / "task-2.out").find("/nonexistent/traces"), std::string::npos);
}

}  // namespace
}  // namespace paceline::testing
