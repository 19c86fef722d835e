// PACELINE_PDL_CHAIN's value: which kernels between the GEMMs are launched programmatically
// (src/exec/cuda/programmatic_launch.cuh).
#include "exec/cuda/programmatic_chain.h"

#include <gtest/gtest.h>

namespace paceline::cuda {
namespace {

constexpr ChainedKernel kAll[] = {ChainedKernel::kNorm,   ChainedKernel::kQk,
                                  ChainedKernel::kDecode, ChainedKernel::kMerge,
                                  ChainedKernel::kSwiglu, ChainedKernel::kArgmax};

TEST(ProgrammaticChain, UnsetNamesTheKernelsThatNeverLost) {
  EXPECT_TRUE(chain_names(nullptr, ChainedKernel::kNorm));
  EXPECT_TRUE(chain_names(nullptr, ChainedKernel::kQk));
  EXPECT_TRUE(chain_names(nullptr, ChainedKernel::kSwiglu));
  EXPECT_TRUE(chain_names(nullptr, ChainedKernel::kArgmax));
  EXPECT_TRUE(chain_names(nullptr, ChainedKernel::kMerge));
  EXPECT_FALSE(chain_names(nullptr, ChainedKernel::kDecode));
}

TEST(ProgrammaticChain, OneNamesEveryKernel) {
  for (const ChainedKernel k : kAll) EXPECT_TRUE(chain_names("1", k));
}

TEST(ProgrammaticChain, ZeroAndEmptyNameNone) {
  for (const ChainedKernel k : kAll) {
    EXPECT_FALSE(chain_names("0", k));
    EXPECT_FALSE(chain_names("", k));
  }
}

TEST(ProgrammaticChain, AListNamesExactlyItsKernels) {
  const char* list = "norm,swiglu,argmax";
  EXPECT_TRUE(chain_names(list, ChainedKernel::kNorm));
  EXPECT_TRUE(chain_names(list, ChainedKernel::kSwiglu));
  EXPECT_TRUE(chain_names(list, ChainedKernel::kArgmax));
  EXPECT_FALSE(chain_names(list, ChainedKernel::kQk));
  EXPECT_FALSE(chain_names(list, ChainedKernel::kDecode));
  EXPECT_FALSE(chain_names(list, ChainedKernel::kMerge));
  EXPECT_TRUE(chain_names("merge", ChainedKernel::kMerge));
  EXPECT_TRUE(chain_names("qk,decode", ChainedKernel::kDecode));
}

TEST(ProgrammaticChain, OnlyWholeNamesCount) {
  EXPECT_FALSE(chain_names("norms", ChainedKernel::kNorm));
  EXPECT_FALSE(chain_names("nor", ChainedKernel::kNorm));
  EXPECT_FALSE(chain_names("decode2,qkv", ChainedKernel::kDecode));
  EXPECT_FALSE(chain_names("decode2,qkv", ChainedKernel::kQk));
  EXPECT_TRUE(chain_names("bogus,,decode", ChainedKernel::kDecode));
}

}  // namespace
}  // namespace paceline::cuda
