// The Slurm array job of a sweep: the script runs point i as task i with its environment, quotes
// every word, starts a server first when the sweep benches one; the manifest reads back as
// written; a point's state comes from what its task left (summary, exit status, nothing).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "base/error.h"
#include "bench/slurm_job.h"

namespace paceline::bench {
namespace {

namespace fs = std::filesystem;

SlurmJob two_points(const std::string& dir) {
  SlurmJob job;
  job.paceline = "/opt/paceline/bin/paceline";
  job.sweep_dir = dir;
  job.sbatch = {"--partition=gpu", "--time=01:00:00"};
  job.points.push_back({"conc-1", 1, {"sim", "--traces", "it's here", "--concurrency", "1"}, {}});
  job.points.push_back(
      {"interval-4/conc-8", 8, {"sim", "--concurrency", "8"}, {{"ATOM_PREFILL_DELAYER", "1"}}});
  return job;
}

TEST(SlurmJob, ShellQuoteSurvivesQuotesAndSpaces) {
  EXPECT_EQ(shell_quote("abc"), "'abc'");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(shell_quote(""), "''");
}

TEST(SlurmJob, ScriptIsAnArrayOfOneTaskPerPoint) {
  const std::string s = slurm_script(two_points("/scratch/sweep"));
  EXPECT_TRUE(s.starts_with("#!/bin/bash\n"));
  EXPECT_NE(s.find("#SBATCH --array=0-1\n"), std::string::npos) << s;
  EXPECT_NE(s.find("#SBATCH --output=/scratch/sweep/slurm/task-%a.out\n"), std::string::npos);
  EXPECT_NE(s.find("#SBATCH --partition=gpu\n#SBATCH --time=01:00:00\n"), std::string::npos);
  EXPECT_NE(s.find("exec \"$PACELINE\" 'sim' '--traces' 'it'\\''s here' '--concurrency' '1'"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("export ATOM_PREFILL_DELAYER='1'"), std::string::npos);
  // The environment belongs to point 1 only: it is exported after "1)".
  EXPECT_GT(s.find("export ATOM_PREFILL_DELAYER"), s.find("  1)\n"));
  EXPECT_NE(s.find("echo \"$rc\" >\"$dir/exit_status\""), std::string::npos);
  EXPECT_EQ(s.find("with_server"), std::string::npos);  // simulated points need no server
}

TEST(SlurmJob, BenchPointsStartTheirServerFirst) {
  SlurmJob job = two_points("/s");
  job.server = std::vector<std::string>{"--model", "qwen3-8b", "--device", "cuda"};
  const std::string s = slurm_script(job);
  EXPECT_NE(s.find("SERVER_ARGS=( '--model' 'qwen3-8b' '--device' 'cuda' )"), std::string::npos)
      << s;
  EXPECT_NE(s.find("with_server 8000 'sim'"), std::string::npos) << s;
  EXPECT_NE(s.find("with_server 8001 'sim'"), std::string::npos) << s;
}

TEST(SlurmJob, BadEnvironmentNamesAndEmptyJobsAreRefused) {
  SlurmJob job = two_points("/s");
  job.points[0].env["BAD NAME"] = "1";
  EXPECT_THROW(slurm_script(job), Error);
  job.points.clear();
  EXPECT_THROW(slurm_script(job), Error);
}

TEST(SlurmJob, ManifestReadsBackAsWritten) {
  SlurmJob job = two_points("/s");
  job.job_id = "4242";
  const SlurmJob back = slurm_job_from_json(slurm_job_json(job), "slurm.json");
  EXPECT_EQ(slurm_job_json(back), slurm_job_json(job));
  EXPECT_THROW(slurm_job_from_json(nlohmann::json::object(), "x/slurm.json"), Error);
  try {
    slurm_job_from_json({{"paceline", "p"}, {"sweep_dir", "d"}, {"points", {{{"name", 3}}}}},
                        "x/slurm.json");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("x/slurm.json"), std::string::npos) << e.what();
  }
}

TEST(SlurmJob, SbatchJobIdIsTheLeadingNumber) {
  EXPECT_EQ(parse_sbatch_job_id("1234\n"), "1234");
  EXPECT_EQ(parse_sbatch_job_id("1234;cluster-a\n"), "1234");
  EXPECT_EQ(parse_sbatch_job_id("sbatch: error: invalid partition\n"), "");
}

// A task that wrote its summary is done; one whose exit status is not 0 failed (even with a
// summary); one that said 0 without a summary failed; one that left nothing is missing.
TEST(SlurmJob, PointStateComesFromWhatItsTaskLeft) {
  const fs::path dir = fs::temp_directory_path() / ("paceline-slurm-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  SlurmJob job = two_points(dir.string());
  job.points.push_back({"conc-16", 16, {"sim"}, {}});
  job.points.push_back({"conc-32", 32, {"sim"}, {}});
  auto put = [&](const std::string& point, const std::string& file, const std::string& text) {
    fs::create_directories(dir / point);
    std::ofstream(dir / point / file) << text;
  };
  put("conc-1", "summary.json", "{}");
  put("conc-1", "exit_status", "0\n");
  put("interval-4/conc-8", "summary.json", "{}");
  put("interval-4/conc-8", "exit_status", "1\n");
  put("conc-16", "exit_status", "0\n");
  const std::vector<SlurmPointStatus> st = slurm_point_status(job);
  ASSERT_EQ(st.size(), 4u);
  EXPECT_EQ(st[0].state, SlurmPointState::kDone);
  EXPECT_EQ(st[1].state, SlurmPointState::kFailed);
  EXPECT_TRUE(st[1].has_summary);
  EXPECT_NE(st[1].detail.find("exit status 1"), std::string::npos) << st[1].detail;
  EXPECT_NE(st[1].detail.find("slurm/task-1.out"), std::string::npos) << st[1].detail;
  EXPECT_EQ(st[2].state, SlurmPointState::kFailed);
  EXPECT_FALSE(st[2].has_summary);
  EXPECT_NE(st[2].detail.find("summary.json"), std::string::npos) << st[2].detail;
  EXPECT_EQ(st[3].state, SlurmPointState::kMissing);
  EXPECT_NE(st[3].detail.find("task 3"), std::string::npos) << st[3].detail;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace paceline::bench
