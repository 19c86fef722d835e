// The tensor-parallel ranks' communicators (src/exec/nccl_communicators.h) against the stand-in
// NCCL (tests/exec/fake_nccl: one rank on the host, a collective is a copy): one rank's sum and
// gather leave its data, NVLink multicast is off once they exist, a rank or a device list that
// cannot be is refused, and a failed call is an error naming it with NCCL's words.
#include "exec/nccl_communicators.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <cstdlib>
#include <memory>
#include <string>

#include "base/error.h"

namespace paceline::nccl {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

TEST(NcclCommunicators, OneRanksSumAndGatherLeaveItsData) {
  const std::unique_ptr<Library> lib = Library::load(PACELINE_FAKE_NCCL);
  const Communicators comms(*lib, {0});
  EXPECT_EQ(comms.ranks(), 1);
  ASSERT_NE(std::getenv("NCCL_NVLS_ENABLE"), nullptr);
  EXPECT_STREQ(std::getenv("NCCL_NVLS_ENABLE"), "0");
  std::array<float, 3> residual{1.5f, -2.0f, 4.0f};
  const std::array<float, 3> before = residual;
  comms.all_reduce_sum_f32(0, residual.data(), residual.size(), nullptr);
  EXPECT_EQ(residual, before);
  std::array<float, 3> gathered{};
  comms.all_gather_f32(0, residual.data(), gathered.data(), residual.size(), nullptr);
  EXPECT_EQ(gathered, before);
}

TEST(NcclCommunicators, ARankOrADeviceListThatCannotBeIsRefused) {
  const std::unique_ptr<Library> lib = Library::load(PACELINE_FAKE_NCCL);
  const Communicators comms(*lib, {0});
  float x = 1.0f;
  EXPECT_THAT([&] { comms.all_reduce_sum_f32(1, &x, 1, nullptr); },
              ThrowsMessage<Error>(HasSubstr("rank 1 of 1")));
  EXPECT_THAT([&] { Communicators none(*lib, {}); }, ThrowsMessage<Error>(HasSubstr("no device")));
  EXPECT_THAT(
      [&] {
        Communicators twice(*lib, {0, 0});
      },
      ThrowsMessage<Error>(HasSubstr("listed twice")));
}

TEST(NcclCommunicators, AFailedCallIsAnErrorNamingItWithNcclsWords) {
  const std::unique_ptr<Library> lib = Library::load(PACELINE_FAKE_NCCL);
  EXPECT_NO_THROW(check(*lib, Result::kSuccess, "ncclAllReduce"));
  EXPECT_THAT([&] { check(*lib, Result::kInvalidArgument, "ncclAllReduce"); },
              ThrowsMessage<Error>(::testing::StrEq(
                  "ncclAllReduce failed: invalid argument (fake) (NCCL error 4)")));
}

}  // namespace
}  // namespace paceline::nccl
