// PACELINE_GEMM_L2_PREFETCH's parse (gemm_l2_prefetch.h): the switch of the small-M GEMM's L2
// prefetch, read once at the CUDA executor's start.
#include "exec/cuda/gemm_l2_prefetch.h"

#include <gtest/gtest.h>

namespace paceline::cuda {
namespace {

TEST(GemmL2Prefetch, UnsetIsOffAndWholeNumbersUpToTheMostAreKBlocks) {
  std::string error;
  EXPECT_EQ(gemm_l2_prefetch_from(nullptr, &error), 0);
  EXPECT_EQ(gemm_l2_prefetch_from("", &error), 0);
  EXPECT_EQ(gemm_l2_prefetch_from("0", &error), 0);
  EXPECT_EQ(gemm_l2_prefetch_from("4", &error), 4);
  EXPECT_EQ(gemm_l2_prefetch_from("64", &error), kSmallML2PrefetchMax);
  EXPECT_TRUE(error.empty()) << error;
}

TEST(GemmL2Prefetch, AnythingElseIsAnErrorNamingTheVariableAndTheValue) {
  for (const char* bad : {"65", "-1", "on", "4k", " 4", "99999999999999999999"}) {
    std::string error;
    EXPECT_FALSE(gemm_l2_prefetch_from(bad, &error).has_value()) << bad;
    EXPECT_NE(error.find(std::string("PACELINE_GEMM_L2_PREFETCH=\"") + bad + "\""),
              std::string::npos)
        << error;
    EXPECT_NE(error.find("0 to 64"), std::string::npos) << error;
  }
}

}  // namespace
}  // namespace paceline::cuda
