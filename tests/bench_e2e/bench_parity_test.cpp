// `paceline bench` as a vllm bench serve user runs it, against `paceline serve --device null`
// (the zero-cost executor, so arrivals are not shaped by compute): a random dataset at a Poisson
// request rate with a header and extra body fields, the arrival process checked statistically on
// what the server received, the progress lines on a redirected stderr, absolute times, and the exit
// status of invalid runs and failed commands across subcommands.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <numeric>
#include <string>
#include <vector>

#include "../serve/server_process.h"
#include "bench_process.h"

namespace paceline::testing {
namespace {

namespace fs = std::filesystem;

double unix_now_s() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

// A fresh directory per test, kept when the test failed (to read what the command wrote).
class RunDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("paceline-bench-parity-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }
  ProcessResult run(const std::vector<std::string>& args) {
    return run_paceline(args, dir_ / "stdout.txt");
  }
  fs::path dir_;
};

class BenchParity : public RunDirTest {
 protected:
  static void SetUpTestSuite() {
    server_ = new ServerProcess({"--device", "null", "--api-key", "k3y"});
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }

  std::string url() const { return "http://127.0.0.1:" + std::to_string(server_->port()); }

  static ServerProcess* server_;
};

ServerProcess* BenchParity::server_ = nullptr;

TEST_F(BenchParity, PoissonRandomDatasetWithHeaderAndExtraBody) {
  // 300 requests at 50 req/s: about 6 s. The server requires the key, so every answer proves the
  // -H header arrived; max_tokens 3 from --extra-body replaces the dataset's 8-token outputs.
  const double before_s = unix_now_s();
  ProcessResult r =
      run_paceline({"bench",
                    "--url",
                    url(),
                    "--dataset",
                    "random",
                    "--random-input-len",
                    "64",
                    "--random-output-len",
                    "8",
                    "--random-range-ratio",
                    "0.5",
                    "--request-rate",
                    "50",
                    "--burstiness",
                    "1",
                    "--request-count",
                    "300",
                    "--seed",
                    "5",
                    "-H",
                    "Authorization: Bearer k3y",
                    "--header",
                    "X-Bench-Run: parity",
                    "--extra-body",
                    R"({"max_tokens": 3, "max_completion_tokens": 3, "min_tokens": 3})",
                    "--progress-interval",
                    "1",
                    "--no-metrics",
                    "--out",
                    (dir_ / "run").string()},
                   dir_ / "stdout.txt");
  const double after_s = unix_now_s();
  ASSERT_EQ(r.status, 0) << r.output << r.errors;

  std::vector<nlohmann::json> records = read_jsonl(dir_ / "run" / "records.jsonl");
  ASSERT_EQ(records.size(), 300u);
  std::vector<double> starts;
  for (const auto& rec : records) {
    ASSERT_EQ(rec["status"], "ok") << rec;
    EXPECT_EQ(rec["osl"], 3) << rec;  // the server's usage: the extra body's max_tokens
    EXPECT_GE(rec["requested_isl"].get<int64_t>(), 32);
    EXPECT_LE(rec["requested_isl"].get<int64_t>(), 96);
    EXPECT_GE(rec["requested_osl"].get<int64_t>(), 4);
    EXPECT_LE(rec["requested_osl"].get<int64_t>(), 12);
    EXPECT_LT(rec["start_s"].get<double>() - rec["scheduled_s"].get<double>(), 0.1) << rec;
    starts.push_back(rec["start_s"].get<double>());
  }
  std::sort(starts.begin(), starts.end());
  // The arrivals as sent: gaps of mean 1/50 s = 20 ms (standard error 1.2 ms over 299 gaps)
  // and a coefficient of variation of 1, as exponential gaps have (standard error about 0.06).
  std::vector<double> gaps;
  for (size_t i = 1; i < starts.size(); ++i) gaps.push_back(starts[i] - starts[i - 1]);
  const double n = static_cast<double>(gaps.size());
  const double mean = std::accumulate(gaps.begin(), gaps.end(), 0.0) / n;
  double var = 0;
  for (double g : gaps) var += (g - mean) * (g - mean);
  const double cv = std::sqrt(var / (n - 1)) / mean;
  EXPECT_NEAR(mean, 0.020, 0.004) << "mean gap";
  EXPECT_NEAR(cv, 1.0, 0.25) << "coefficient of variation";

  nlohmann::json summary = read_json(dir_ / "run" / "summary.json");
  const nlohmann::json& settings = summary["settings"];
  EXPECT_EQ(settings["trace_kind"], "random");
  EXPECT_EQ(settings["request_rate"], 50.0);
  EXPECT_EQ(settings["request_count"], 300);
  EXPECT_EQ(settings["headers"], nlohmann::json({"Authorization", "X-Bench-Run"}));
  // started_at is the run's start: inside the process's life, and seconds before its end.
  const double started = settings["started_at_unix_s"].get<double>();
  EXPECT_GT(started, before_s);
  EXPECT_LT(started, after_s - 4.0);
  EXPECT_EQ(settings["started_at"].get<std::string>().size(), 24u);  // ...T15:42:47.123Z
  // Absolute times are the run's start plus the relative ones.
  EXPECT_NEAR(records[0]["start_unix_s"].get<double>(),
              started + records[0]["start_s"].get<double>(), 1e-6);

  // Progress off a terminal: a line of its own every second (the run took about 6 s).
  size_t lines = 0;
  for (size_t at = 0; (at = r.errors.find("progress: [profiling]", at)) != std::string::npos;
       ++at) {
    ++lines;
  }
  EXPECT_GE(lines, 3u) << r.errors;
}

TEST_F(BenchParity, AnInvalidRunExitsNonZeroAndStillWritesItsFiles) {
  // Without the key every request is refused: no request succeeded, the run is invalid.
  ProcessResult r =
      run_paceline({"bench", "--url", url(), "--model", "tiny", "--dataset", "random",
                    "--request-count", "4", "--random-input-len", "16", "--random-output-len", "2",
                    "--no-metrics", "--out", (dir_ / "run").string()},
                   dir_ / "stdout.txt");
  EXPECT_EQ(r.status, 1) << r.output << r.errors;
  EXPECT_NE(r.errors.find("error: the run is invalid: no profiling request succeeded"),
            std::string::npos)
      << r.errors;
  EXPECT_FALSE(read_json(dir_ / "run" / "summary.json")["valid"].get<bool>());
}

TEST_F(BenchParity, ClosedLoopTracesRefuseOpenLoopFlags) {
  ProcessResult r = run_paceline(
      {"bench", "--url", url(), "--traces", PACELINE_SOURCE_DIR "/../shared/traces/agentx",
       "--request-rate", "2", "--out", (dir_ / "run").string()},
      dir_ / "stdout.txt");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.errors.find("error: --request-rate: AgentX sessions replay closed loop"),
            std::string::npos)
      << r.errors;
}

// The exit status of failed commands, subcommand by subcommand.
class FailedCommands : public RunDirTest {};

// Qwen3-8B without --max-model-len: its 40,960-token context is shorter than most turns of this
// AgentX session, so requests overflow and every point is invalid.
std::vector<std::string> overflowing_sim_flags() {
  return {"--model",
          "qwen3-8b",
          "--traces",
          PACELINE_SOURCE_DIR "/../shared/traces/agentx/trace_0010.json",
          "--duration",
          "120",
          "--warmup-requests-per-lane",
          "0"};
}

TEST_F(FailedCommands, SimAndSweepWithEveryPointInvalidExitOne) {
  std::vector<std::string> sim = {"sim", "--concurrency", "1,2", "--out", (dir_ / "sim").string()};
  for (const std::string& f : overflowing_sim_flags()) sim.push_back(f);
  ProcessResult r = run(sim);
  EXPECT_EQ(r.status, 1) << r.output << r.errors;
  EXPECT_NE(r.output.find("INVALID RUN"), std::string::npos) << r.output;
  EXPECT_NE(r.errors.find("error: every point of the run is invalid"), std::string::npos);

  std::vector<std::string> sweep = {"sweep", "--sim", "--concurrency",
                                    "1,2",   "--out", (dir_ / "sweep").string()};
  for (const std::string& f : overflowing_sim_flags()) sweep.push_back(f);
  ProcessResult sw = run(sweep);
  EXPECT_EQ(sw.status, 1) << sw.output << sw.errors;
  EXPECT_NE(sw.errors.find("sweep: error: every point is invalid"), std::string::npos) << sw.errors;
}

TEST_F(FailedCommands, EveryOtherSubcommandFailsWithStatusOneAndAnErrorLine) {
  const std::string missing = (dir_ / "missing").string();
  const std::vector<std::vector<std::string>> commands = {
      {"bench", "--traces", missing, "--no-metrics", "--out", (dir_ / "b").string()},
      {"sim", "--model", "tiny", "--traces", missing, "--out", (dir_ / "s").string()},
      {"report", missing},
      {"compare", missing, missing},
      {"generate", "--model", missing, "--prompt", "hi"},
      // A checkpoint whose vocabulary is smaller than its tokenizer's: the engine aborts it.
      {"generate", "--model", PACELINE_SOURCE_DIR "/tests/fixtures/models/qwen3-tiny-random",
       "--prompt", "hi"},
      {"profile", "--from-step-log", missing, "--out", (dir_ / "p.json").string()},
  };
  for (const auto& c : commands) {
    ProcessResult r = run(c);
    EXPECT_EQ(r.status, 1) << c[0] << ": " << r.output << r.errors;
    EXPECT_NE(r.errors.find("error: "), std::string::npos) << c[0] << ": " << r.errors;
  }
}

}  // namespace
}  // namespace paceline::testing
