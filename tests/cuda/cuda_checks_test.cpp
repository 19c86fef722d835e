// Failures are errors with a message, never garbage: the check macros name the call, file and
// line (runs without a GPU), and malformed plans or kernel faults throw paceline::Error.
#include <string>

#include <gtest/gtest.h>

#include "base/error.h"
#include "cuda_test_util.h"
#include "model/config.h"
#include "model/weights.h"

#if PACELINE_HAVE_CUDA
#include "../cpu_forward/test_model.h"
#include "exec/cuda/cuda_check.h"

namespace paceline {
namespace {

TEST(CudaChecks, CudaErrorNamesCallFileAndLine) {
  try {
    PACELINE_CUDA_CHECK(cudaErrorInvalidValue);
    FAIL() << "no throw";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("cudaErrorInvalidValue"), std::string::npos) << m;
    EXPECT_NE(m.find("cuda_checks_test.cpp:"), std::string::npos) << m;
  }
}

TEST(CudaChecks, CublasErrorIsAnError) {
  EXPECT_THROW(PACELINE_CUBLAS_CHECK(CUBLAS_STATUS_INVALID_VALUE), Error);
}

TEST(CudaChecks, MalformedPlansThrow) {
  PACELINE_REQUIRE_GPU();
  ModelConfig config = testing::tiny_config();
  config.head_dim = 16;
  testing::TestWeights weights(config, 3);
  CudaExecutorOptions o;
  o.kv_cache_bytes = 64 * 16 * config.kv_bytes_per_token(2);
  o.max_num_batched_tokens = 256;
  CudaExecutor gpu(config, weights, o);
  StepPlan plan;
  plan.seqs.push_back(testing::make_seq(1, {1, 2, 3}, 0, {999}, 1));  // block outside the cache
  EXPECT_THROW(gpu.execute(plan), Error);
  plan.seqs[0] = testing::make_seq(1, {1, 500, 3}, 0, {0}, 1);  // token outside the vocabulary
  EXPECT_THROW(gpu.execute(plan), Error);
  plan.seqs[0] = testing::make_seq(1, {1, 2, 3}, 14, {0}, 1);  // table too short
  EXPECT_THROW(gpu.execute(plan), Error);
  plan.seqs[0] = testing::make_seq(1, {1, 2, 3}, 0, {0}, 1);  // and it still works afterwards
  StepResult r = gpu.execute(plan);
  ASSERT_EQ(r.seqs.size(), 1u);
  EXPECT_EQ(r.seqs[0].tokens.size(), 1u);
}

TEST(CudaChecks, UnsupportedShapeIsRefusedAtLoad) {
  PACELINE_REQUIRE_GPU();
  ModelConfig config = testing::tiny_config();
  config.num_attention_heads = 4;
  config.num_key_value_heads = 3;  // heads do not split into KV groups
  testing::TestWeights weights(config, 3);
  CudaExecutorOptions o;
  o.kv_cache_bytes = 1 << 20;
  EXPECT_THROW(CudaExecutor(config, weights, o), Error);
}

}  // namespace
}  // namespace paceline

#else
TEST(CudaChecks, NeedsCudaBuild) { GTEST_SKIP() << "this build has no CUDA"; }
#endif
