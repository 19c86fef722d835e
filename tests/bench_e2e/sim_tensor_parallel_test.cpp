// `paceline sim --tensor-parallel-size N` (-tp N, vLLM's flag) as a user runs it: a TP-2 replica
// of Qwen3-32B on the H200 roofline, replayed briefly on one AgentX trace. Its summary counts two
// GPUs for per-GPU throughput, records the size, and has more than twice the KV blocks of TP 1
// (each GPU holds half the weights); contradictory and unsplittable sizes are refused at startup
// naming the flags.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench_process.h"

namespace paceline::testing {
namespace {

namespace fs = std::filesystem;

const char* kTrace = PACELINE_SOURCE_DIR "/../shared/traces/agentx/trace_0010.json";

class SimTensorParallel : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(kTrace)) GTEST_SKIP() << "no AgentX trace at " << kTrace;
    dir_ = fs::temp_directory_path() /
           fmt::format("paceline-sim-tp-{}-{}", ::getpid(),
                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!HasFailure() && !dir_.empty()) fs::remove_all(dir_);
  }

  // A short run of Qwen3-32B at concurrency 2 into dir_/name, with `extra` flags.
  ProcessResult sim(const std::string& name, const std::vector<std::string>& extra) {
    std::vector<std::string> args = {"sim", "--model", "qwen3-32b", "--traces", kTrace,
                                     "--concurrency", "2", "--duration", "60",
                                     "--warmup-requests-per-lane", "1", "--max-isl", "32768",
                                     "--out", (dir_ / name).string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_paceline(args, dir_ / (name + ".stdout"));
  }

  nlohmann::json summary(const std::string& name) {
    std::ifstream in(dir_ / name / "summary.json");
    return nlohmann::json::parse(in);
  }

  fs::path dir_;
};

TEST_F(SimTensorParallel, ATp2ReplicaCountsTwoGpusAndHoldsMoreThanTwiceTheKvBlocks) {
  const ProcessResult one = sim("tp1", {});
  ASSERT_EQ(one.status, 0) << one.output << one.errors;
  const ProcessResult two = sim("tp2", {"-tp", "2"});
  ASSERT_EQ(two.status, 0) << two.output << two.errors;
  const nlohmann::json s1 = summary("tp1"), s2 = summary("tp2");

  EXPECT_EQ(s1["gpus"], 1);
  EXPECT_EQ(s2["gpus"], 2);
  EXPECT_EQ(s2["settings"]["tensor_parallel_size"], 2);
  EXPECT_EQ(s2["settings"]["gpus"], 2);
  ASSERT_GT(s2["total_tok_s"].get<double>(), 0);
  EXPECT_DOUBLE_EQ(s2["total_tok_s_per_gpu"].get<double>(), s2["total_tok_s"].get<double>() / 2);
  EXPECT_DOUBLE_EQ(s2["output_tok_s_per_gpu"].get<double>(),
                   s2["output_tok_s"].get<double>() / 2);
  EXPECT_GT(s2["settings"]["num_kv_blocks"].get<int64_t>(),
            2 * s1["settings"]["num_kv_blocks"].get<int64_t>());
  EXPECT_EQ(s2["simulator"]["profile"]["tensor_parallel_size"], 2);
  EXPECT_NE(s2["simulator"]["cost_model"].get<std::string>().find("tensor parallel 2"),
            std::string::npos);
  // A weight-bound decode at half the bytes a GPU: the TP-2 replica's inter-token latency is lower.
  EXPECT_LT(s2["itl_ms"]["p50"].get<double>(), s1["itl_ms"]["p50"].get<double>());

  // Two replicas of TP 2 are four GPUs.
  const ProcessResult four = sim("tp2x2", {"-tp", "2", "--replicas", "2"});
  ASSERT_EQ(four.status, 0) << four.output << four.errors;
  EXPECT_EQ(summary("tp2x2")["gpus"], 4);
}

TEST_F(SimTensorParallel, RefusesContradictoryAndUnsplittableSizesNamingTheFlags) {
  const ProcessResult gpus = sim("gpus", {"-tp", "2", "--gpus", "1"});
  EXPECT_NE(gpus.status, 0);
  EXPECT_NE((gpus.output + gpus.errors).find("--gpus 1 contradicts --tensor-parallel-size 2"),
            std::string::npos)
      << gpus.output << gpus.errors;
  const ProcessResult three = sim("three", {"--tensor-parallel-size", "3"});
  EXPECT_NE(three.status, 0);
  EXPECT_NE((three.output + three.errors)
                .find("--tensor-parallel-size 3: num_attention_heads 64 does not split into 3 "
                      "equal parts"),
            std::string::npos)
      << three.output << three.errors;
  // --gpus that agrees is fine, and so is --gpus alone at TP 1 (a server's GPUs, as before).
  EXPECT_EQ(sim("agree", {"-tp", "2", "--gpus", "2"}).status, 0);
  const ProcessResult alone = sim("alone", {"--gpus", "4"});
  ASSERT_EQ(alone.status, 0) << alone.errors;
  EXPECT_EQ(summary("alone")["gpus"], 4);
}

}  // namespace
}  // namespace paceline::testing
