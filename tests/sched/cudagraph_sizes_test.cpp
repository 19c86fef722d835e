// CUDA-graph capture sizes: the list syntax, the default list, and padding a decode batch.
#include "sched/cudagraph_sizes.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/error.h"

namespace paceline {
namespace {

using Sizes = std::vector<int32_t>;

std::string error_of(std::string_view spec) {
  try {
    parse_cudagraph_capture_sizes(spec);
  } catch (const Error& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(CudaGraphSizes, ParsesSizesAndInclusiveRanges) {
  Sizes expected;
  for (int32_t s = 1; s <= 32; ++s) expected.push_back(s);
  for (int32_t s : {48, 64, 128}) expected.push_back(s);
  EXPECT_EQ(parse_cudagraph_capture_sizes("1-32,48,64,128"), expected);
  EXPECT_EQ(parse_cudagraph_capture_sizes("8"), Sizes{8});
  EXPECT_EQ(parse_cudagraph_capture_sizes("4-4"), Sizes{4});
  EXPECT_EQ(parse_cudagraph_capture_sizes(" 2 , 6 - 8 "), (Sizes{2, 6, 7, 8}));
}

TEST(CudaGraphSizes, SortsAndDeduplicates) {
  EXPECT_EQ(parse_cudagraph_capture_sizes("64,1-4,2,3-5,64"), (Sizes{1, 2, 3, 4, 5, 64}));
}

TEST(CudaGraphSizes, MalformedElementsAreErrorsNamingTheElement) {
  EXPECT_NE(error_of("1,x,4").find("'x'"), std::string::npos) << error_of("1,x,4");
  EXPECT_NE(error_of("1,8-2").find("'8-2'"), std::string::npos) << error_of("1,8-2");
  EXPECT_NE(error_of("0,4").find("'0'"), std::string::npos) << error_of("0,4");
  EXPECT_NE(error_of("-3").find("'-3'"), std::string::npos) << error_of("-3");
  EXPECT_NE(error_of("1-").find("'1-'"), std::string::npos) << error_of("1-");
  EXPECT_NE(error_of("2.5").find("'2.5'"), std::string::npos) << error_of("2.5");
  EXPECT_NE(error_of("+4").find("'+4'"), std::string::npos) << error_of("+4");
  EXPECT_NE(error_of("1-2-3").find("'1-2-3'"), std::string::npos) << error_of("1-2-3");
  EXPECT_NE(error_of("1,,4").find("element 2"), std::string::npos) << error_of("1,,4");
  EXPECT_NE(error_of("1,4,").find("element 3"), std::string::npos) << error_of("1,4,");
  EXPECT_NE(error_of("99999999999").find("'99999999999'"), std::string::npos);
  EXPECT_NE(error_of("1-100000").find("'1-100000'"), std::string::npos);
  EXPECT_NE(error_of("").find("empty"), std::string::npos);
  EXPECT_NE(error_of("  ").find("empty"), std::string::npos);
}

TEST(CudaGraphSizes, DefaultIsCappedAtMaxNumSeqs) {
  EXPECT_EQ(default_cudagraph_capture_sizes(256), (Sizes{1, 2, 4, 8, 16, 32, 48, 64, 128, 256}));
  EXPECT_EQ(default_cudagraph_capture_sizes(1024),
            (Sizes{1, 2, 4, 8, 16, 32, 48, 64, 128, 256, 512}));
  EXPECT_EQ(default_cudagraph_capture_sizes(1), Sizes{1});
  // As vLLM: only listed sizes <= max_num_seqs; max_num_seqs itself is not added.
  EXPECT_EQ(default_cudagraph_capture_sizes(100), (Sizes{1, 2, 4, 8, 16, 32, 48, 64}));
  EXPECT_THROW(default_cudagraph_capture_sizes(0), Error);
}

TEST(CudaGraphSizes, PadsToTheSmallestCapturedSizeThatHoldsTheBatch) {
  const Sizes sizes = parse_cudagraph_capture_sizes("1,2,4,8,16,48");
  EXPECT_EQ(padded_batch_size(sizes, 1), 1);
  EXPECT_EQ(padded_batch_size(sizes, 3), 4);
  EXPECT_EQ(padded_batch_size(sizes, 8), 8);
  EXPECT_EQ(padded_batch_size(sizes, 9), 16);
  EXPECT_EQ(padded_batch_size(sizes, 17), 48);
  EXPECT_EQ(padded_batch_size(sizes, 48), 48);
}

TEST(CudaGraphSizes, RunsEagerlyAboveTheLargestOrWithNothingToReplay) {
  const Sizes sizes = default_cudagraph_capture_sizes(256);
  EXPECT_EQ(padded_batch_size(sizes, 257), 0);
  EXPECT_EQ(padded_batch_size({}, 1), 0);
  EXPECT_EQ(padded_batch_size(sizes, 0), 0);
}

TEST(CudaGraphSizes, PaddingNeverShrinksABatch) {
  const Sizes sizes = parse_cudagraph_capture_sizes("1-8,12,20-24,100");
  for (int32_t batch = 1; batch <= 120; ++batch) {
    const int32_t padded = padded_batch_size(sizes, batch);
    if (batch > 100) {
      EXPECT_EQ(padded, 0) << batch;
    } else {
      EXPECT_GE(padded, batch);
      EXPECT_EQ(padded_batch_size(sizes, padded), padded);  // a captured size pads to itself
    }
  }
}

}  // namespace
}  // namespace paceline
