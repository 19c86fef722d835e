// `--tensor-parallel-size` (`-tp`, vLLM's flag) through the real binary: on the CPU the model
// split into two ranks generates the unsplit model's greedy tokens; a split that does not divide
// the model, or a device that cannot split it, is an error at startup that says why (for the
// cuda executor, also whether NCCL loads).
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "../bench_e2e/bench_process.h"
#include "model_folder.h"

namespace paceline::testing {
namespace {

using ::testing::HasSubstr;

constexpr std::chrono::seconds kLimit(120);

ProcessResult generate(const ModelFolder& folder, const std::vector<std::string>& extra) {
  std::vector<std::string> args = {"generate", "--model", "tiny", "--prompt", "The quick brown fox",
                                   "--max-tokens", "12", "--temperature", "0", "--threads", "1"};
  args.insert(args.end(), extra.begin(), extra.end());
  return run_paceline(args, folder.path() / "stdout.txt", {}, {}, kLimit);
}

// The answer and its token count, without the timings that follow them.
std::string answer(const std::string& output) { return output.substr(0, output.find(", ttft")); }

TEST(TensorParallelCli, TwoCpuRanksGenerateTheUnsplitTokens) {
  ModelFolder folder("tp-generate");
  const ProcessResult whole = generate(folder, {});
  const ProcessResult split = generate(folder, {"-tp", "2"});
  ASSERT_EQ(whole.status, 0) << whole.errors;
  ASSERT_EQ(split.status, 0) << split.errors;
  EXPECT_THAT(whole.output, HasSubstr("12 tokens, finish_reason=length"));
  EXPECT_EQ(answer(split.output), answer(whole.output));
  EXPECT_THAT(split.errors, HasSubstr("split into 2 tensor-parallel ranks"));
}

TEST(TensorParallelCli, ASplitThatDoesNotDivideIsAnErrorNamingTheField) {
  ModelFolder folder("tp-three");
  const ProcessResult r = generate(folder, {"--tensor-parallel-size", "3"});
  EXPECT_NE(r.status, 0);
  EXPECT_THAT(r.errors, HasSubstr("--tensor-parallel-size 3: num_attention_heads 4"));
}

TEST(TensorParallelCli, OnlyTheCpuSplitsTheModel) {
  ModelFolder folder("tp-null");
  const ProcessResult r = generate(folder, {"--device", "null", "-tp", "2"});
  EXPECT_NE(r.status, 0);
  EXPECT_THAT(r.errors, HasSubstr("--tensor-parallel-size 2: the null executor runs on one device"));
}

// The cuda executor refuses too, and says whether the NCCL its ranks will need loads (here it
// may or may not be installed: either answer names it).
TEST(TensorParallelCli, TheCudaExecutorRefusesAndSaysWhetherNcclLoads) {
  ModelFolder folder("tp-cuda");
  const ProcessResult r = generate(folder, {"--device", "cuda", "-tp", "2"});
  EXPECT_NE(r.status, 0);
  EXPECT_THAT(r.errors, HasSubstr("--tensor-parallel-size 2: the cuda executor runs on one device"));
  const bool loads = r.errors.find("(NCCL 2.") != std::string::npos &&
                     r.errors.find("loads from libnccl.so.2)") != std::string::npos;
  const bool missing = r.errors.find("cannot load libnccl.so.2") != std::string::npos;
  EXPECT_TRUE(loads || missing) << r.errors;
}

}  // namespace
}  // namespace paceline::testing
