// `paceline check --timing --decode-context N` as a user runs it, against the real binary: the
// timed decode step decodes the token at position N, so N must be below the model's window
// (max_position_embeddings); past it the check refuses before loading anything, naming the flag
// and the largest value it takes. The rule comes before the device check, so it runs on a
// machine without a GPU too.
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "cuda_test_util.h"

#if PACELINE_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace paceline {
namespace {

struct Result {
  int rc = -1;
  std::string out;
};

Result run_binary(const std::string& args) {
  const std::string cmd = std::string(PACELINE_BINARY) + " " + args + " 2>&1";
  Result r;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) r.out.append(buf.data(), n);
  const int status = pclose(pipe);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string timing_args(const std::string& model, long long context) {
  const std::string flags =
      " --load-format dummy --timing --skip-invariance --decode-batches 1 --prefill-lengths 16 "
      "--repeats 1 --decode-context ";
  return "check --device cuda --model " + testing::source_dir() + "/configs/models/" + model +
         flags + std::to_string(context);
}

TEST(CheckCli, DecodeContextPastTheModelWindowIsRefused) {
  if (!std::filesystem::exists(PACELINE_BINARY)) {
    GTEST_SKIP() << "the paceline binary of this build is not here: " << PACELINE_BINARY;
  }
  // The YaRN model's window is 131,072 positions: position 131,072 is past it.
  Result yarn = run_binary(timing_args("qwen3-8b-yarn.json", 131072));
  EXPECT_EQ(yarn.rc, 1) << yarn.out;
  EXPECT_NE(yarn.out.find("--decode-context 131072"), std::string::npos) << yarn.out;
  EXPECT_NE(yarn.out.find("131072 positions (0 to 131071)"), std::string::npos) << yarn.out;
  EXPECT_NE(yarn.out.find("the largest --decode-context it takes is 131071"), std::string::npos)
      << yarn.out;
  // Qwen3-8B without YaRN: 40,960.
  Result plain = run_binary(timing_args("qwen3-8b.json", 40960));
  EXPECT_EQ(plain.rc, 1) << plain.out;
  EXPECT_NE(plain.out.find("the largest --decode-context it takes is 40959"), std::string::npos)
      << plain.out;
  Result zero = run_binary(timing_args("qwen3-8b.json", 0));
  EXPECT_EQ(zero.rc, 1) << zero.out;
  EXPECT_NE(zero.out.find("--decode-context must be at least 1"), std::string::npos) << zero.out;
}

// --mixed-chunk takes 0 (off) or a number of tokens; a negative one is refused before anything
// loads, naming the flag.
TEST(CheckCli, NegativeMixedChunkIsRefused) {
  if (!std::filesystem::exists(PACELINE_BINARY)) {
    GTEST_SKIP() << "the paceline binary of this build is not here: " << PACELINE_BINARY;
  }
  Result r = run_binary(timing_args("qwen3-8b.json", 1024) + " --mixed-chunk -1");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_NE(r.out.find("--mixed-chunk must be 0 (off) or a number of tokens, got -1"),
            std::string::npos)
      << r.out;
}

// --kernel-timeline records the timed steps: without --timing it is refused before anything
// loads, naming both flags.
TEST(CheckCli, KernelTimelineWithoutTimingIsRefused) {
  if (!std::filesystem::exists(PACELINE_BINARY)) {
    GTEST_SKIP() << "the paceline binary of this build is not here: " << PACELINE_BINARY;
  }
  const std::string file = ::testing::TempDir() + "timeline.md";
  Result r =
      run_binary("check --device cuda --model " + testing::source_dir() +
                 "/configs/models/qwen3-8b.json --load-format dummy --kernel-timeline " + file);
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_NE(r.out.find("--kernel-timeline " + file +
                       ": it records the timed steps, so it needs --timing"),
            std::string::npos)
      << r.out;
  EXPECT_FALSE(std::filesystem::exists(file));
}

// --max-num-seqs caps every batch the check decodes, as in serving (the executor's graphs and
// GEMM follow it): a timed or checked batch above it is refused before anything loads, naming
// the list, the batch and the cap.
TEST(CheckCli, ABatchAboveMaxNumSeqsIsRefused) {
  if (!std::filesystem::exists(PACELINE_BINARY)) {
    GTEST_SKIP() << "the paceline binary of this build is not here: " << PACELINE_BINARY;
  }
  const std::string model =
      "check --device cuda --model " + testing::source_dir() + "/configs/models/qwen3-8b.json";
  Result timed = run_binary(model +
                            " --load-format dummy --timing --skip-invariance --decode-batches "
                            "1,16,64 --max-num-seqs 32");
  EXPECT_EQ(timed.rc, 1) << timed.out;
  EXPECT_NE(timed.out.find("--decode-batches 1,16,64: batch 64 is more than --max-num-seqs 32 "
                           "lets a step decode"),
            std::string::npos)
      << timed.out;
  // The invariance check's default batches (1, 4, 8, 64).
  Result checked = run_binary(model + " --load-format dummy --max-num-seqs 8");
  EXPECT_EQ(checked.rc, 1) << checked.out;
  EXPECT_NE(checked.out.find("--batch-sizes 1,4,8,64: batch 64 is more than --max-num-seqs 8"),
            std::string::npos)
      << checked.out;
  Result zero = run_binary(model + " --load-format dummy --max-num-seqs 0");
  EXPECT_EQ(zero.rc, 1) << zero.out;
  EXPECT_NE(zero.out.find("--max-num-seqs must be at least 1, got 0"), std::string::npos)
      << zero.out;
}

// --tensor-parallel-size N splits the checked model over N ranks (NCCL over N GPUs, or all on
// one GPU with --ranks-on-one-device): a size that does not split the model, and
// --ranks-on-one-device without a split, are refused before anything loads, naming why.
TEST(CheckCli, ATensorParallelSizeThatDoesNotSplitOrRanksWithoutASplitAreRefused) {
  if (!std::filesystem::exists(PACELINE_BINARY)) {
    GTEST_SKIP() << "the paceline binary of this build is not here: " << PACELINE_BINARY;
  }
  const std::string model =
      "check --device cuda --model " + testing::source_dir() + "/configs/models/qwen3-8b.json";
  Result three = run_binary(model + " --load-format dummy -tp 3");
  EXPECT_EQ(three.rc, 1) << three.out;
  EXPECT_NE(three.out.find("--tensor-parallel-size 3: num_attention_heads 32 does not split into "
                           "3 equal parts"),
            std::string::npos)
      << three.out;
  Result alone = run_binary(model + " --load-format dummy --ranks-on-one-device");
  EXPECT_EQ(alone.rc, 1) << alone.out;
  EXPECT_NE(alone.out.find("--ranks-on-one-device puts tensor-parallel ranks on one GPU: it needs "
                           "--tensor-parallel-size above 1"),
            std::string::npos)
      << alone.out;
}

// On one GPU: two ranks of Qwen3-0.6B (dummy weights) joined on the device, checked for batch
// invariance eagerly and through their CUDA graphs, as a user runs the check.
TEST(CheckCli, TwoRanksOnOneGpuAreBatchInvariant) {
  if (!std::filesystem::exists(PACELINE_BINARY)) {
    GTEST_SKIP() << "the paceline binary of this build is not here: " << PACELINE_BINARY;
  }
  if (!testing::gpu_present()) GTEST_SKIP() << testing::gpu_absence();
  Result r = run_binary("check --device cuda --model " + testing::source_dir() +
                        "/configs/models/qwen3-0.6b.json --load-format dummy -tp 2 "
                        "--ranks-on-one-device --kv-cache-memory 2G --prompts 8 --steps 8 "
                        "--batch-sizes 1,4,8 --max-num-seqs 8");
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("tensor parallel: 2 ranks on device 0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("batch invariance: PASS"), std::string::npos) << r.out;
#if PACELINE_HAVE_CUDA
  // Without the flag the ranks need a GPU each: on one GPU that is refused, saying so.
  int gpus = 0;
  if (cudaGetDeviceCount(&gpus) == cudaSuccess && gpus == 1) {
    Result nccl = run_binary("check --device cuda --model " + testing::source_dir() +
                             "/configs/models/qwen3-0.6b.json --load-format dummy -tp 2");
    EXPECT_EQ(nccl.rc, 1) << nccl.out;
    EXPECT_NE(nccl.out.find("--tensor-parallel-size 2: this machine has 1 GPU"), std::string::npos)
        << nccl.out;
  }
#endif
}

TEST(CheckCli, DecodeContextInsideTheWindowIsTaken) {
  if (!std::filesystem::exists(PACELINE_BINARY)) {
    GTEST_SKIP() << "the paceline binary of this build is not here: " << PACELINE_BINARY;
  }
  if (testing::gpu_present()) {
    GTEST_SKIP() << "with a GPU the check would prefill four 128k contexts of Qwen3-8B";
  }
  // Without a GPU the check gets past the rule and stops at the device (or at the build's lack of
  // CUDA): the error is about that, not about the context.
  Result last = run_binary(timing_args("qwen3-8b-yarn.json", 131071));
  EXPECT_EQ(last.rc, 1) << last.out;
  EXPECT_EQ(last.out.find("--decode-context"), std::string::npos) << last.out;
  EXPECT_NE(last.out.find("error"), std::string::npos) << last.out;
}

}  // namespace
}  // namespace paceline
