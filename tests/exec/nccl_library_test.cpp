// NCCL loaded at run time (src/exec/nccl_library.h), against stand-in libraries built by CMake
// (tests/exec/fake_nccl): every entry point resolved and called through, a library that is
// missing or lacks an entry point refused with the library and the reason named, and NVLink
// multicast kept off for the process and its children.
#include "exec/nccl_library.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "base/error.h"

namespace paceline::nccl {
namespace {

std::string error_of_load(const std::string& path) {
  try {
    Library::load(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(NcclVersion, CodesOfBothSchemesReadAsMajorMinorPatch) {
  EXPECT_EQ(version_string(22809), "2.28.9");  // from 2.9: X * 10000 + Y * 100 + Z
  EXPECT_EQ(version_string(21903), "2.19.3");
  EXPECT_EQ(version_string(2804), "2.8.4");  // up to 2.8: X * 1000 + Y * 100 + Z
  EXPECT_EQ(version_string(0), "unknown");
}

TEST(NcclLibrary, EveryEntryPointIsResolvedAndCalledThrough) {
  const std::unique_ptr<Library> nccl = Library::load(PACELINE_FAKE_NCCL);
  EXPECT_EQ(nccl->path(), PACELINE_FAKE_NCCL);
  EXPECT_EQ(version_string(nccl->version()), "2.28.9");
  UniqueId id{};
  ASSERT_EQ(nccl->get_unique_id(&id), Result::kSuccess);
  Comm comm = nullptr;
  ASSERT_EQ(nccl->comm_init_rank(&comm, 1, id, 0), Result::kSuccess);  // the id went through
  ASSERT_NE(comm, nullptr);
  std::array<float, 3> send{1.5f, -2.0f, 4.0f}, recv{};
  ASSERT_EQ(nccl->group_start(), Result::kSuccess);
  EXPECT_EQ(
      nccl->all_reduce(send.data(), recv.data(), 3, DataType::kFloat32, RedOp::kSum, comm, nullptr),
      Result::kSuccess);
  ASSERT_EQ(nccl->group_end(), Result::kSuccess);
  EXPECT_EQ(recv, send);  // one rank: the sum is the input
  std::array<uint16_t, 2> half_send{0x3f80, 0x4000}, half_recv{};
  EXPECT_EQ(
      nccl->all_gather(half_send.data(), half_recv.data(), 2, DataType::kBfloat16, comm, nullptr),
      Result::kSuccess);
  EXPECT_EQ(half_recv, half_send);
  // An error's code and NCCL's words for it come back.
  EXPECT_EQ(nccl->comm_init_rank(&comm, 2, id, 0), Result::kInvalidArgument);
  EXPECT_EQ(nccl->error_string(Result::kInvalidArgument), "invalid argument (fake)");
  EXPECT_EQ(nccl->error_string(Result::kSystemError), "NCCL error 2");
  EXPECT_EQ(nccl->comm_destroy(comm), Result::kSuccess);
  std::array<Comm, 2> comms{};
  const std::array<int, 2> devices{0, 1};
  EXPECT_EQ(nccl->comm_init_all(comms.data(), 2, devices.data()), Result::kSuccess);
  EXPECT_NE(comms[1], nullptr);
}

TEST(NcclLibrary, AMissingLibraryIsRefusedNamingItAndWhatNeedsIt) {
  const std::string e = error_of_load("libnccl-not-here.so.2");
  EXPECT_NE(e.find("cannot load libnccl-not-here.so.2"), std::string::npos) << e;
  EXPECT_NE(e.find("--tensor-parallel-size"), std::string::npos) << e;
  EXPECT_NE(e.find("LD_LIBRARY_PATH"), std::string::npos) << e;
}

TEST(NcclLibrary, ALibraryWithoutAnEntryPointIsRefusedNamingIt) {
  const std::string e = error_of_load(PACELINE_FAKE_NCCL_PARTIAL);
  EXPECT_NE(e.find(PACELINE_FAKE_NCCL_PARTIAL), std::string::npos) << e;
  EXPECT_NE(e.find("no ncclAllGather in it"), std::string::npos) << e;
  EXPECT_NE(e.find("undefined symbol: ncclAllGather"), std::string::npos) << e;  // dlerror's words
}

// The real library where one is installed (the GPU machines; some development machines have it
// with the CUDA toolkit): every entry point resolves and it names its version.
TEST(NcclLibrary, TheInstalledNcclLoadsWhereThereIsOne) {
  std::unique_ptr<Library> nccl;
  try {
    nccl = Library::load();
  } catch (const Error& e) {
    GTEST_SKIP() << e.what();
  }
  EXPECT_GT(nccl->version(), 0);
  std::printf("[ nccl ] %s: NCCL %s\n", nccl->path().c_str(),
              version_string(nccl->version()).c_str());
}

// What a child process of this one sees of NCCL_NVLS_ENABLE.
std::string child_sees() {
  FILE* p = popen("printf %s \"${NCCL_NVLS_ENABLE-unset}\"", "r");
  std::string out;
  char buf[64];
  while (fgets(buf, sizeof buf, p) != nullptr) out += buf;
  pclose(p);
  return out;
}

TEST(NcclNvls, MulticastIsKeptOffHereAndInChildrenAndAnotherValueIsReported) {
  unsetenv("NCCL_NVLS_ENABLE");
  EXPECT_FALSE(keep_nvls_off().has_value());  // unset before: nothing replaced
  EXPECT_STREQ(std::getenv("NCCL_NVLS_ENABLE"), "0");
  EXPECT_EQ(child_sees(), "0");
  EXPECT_FALSE(keep_nvls_off().has_value());  // already 0
  setenv("NCCL_NVLS_ENABLE", "1", 1);
  EXPECT_EQ(keep_nvls_off(), std::optional<std::string>("1"));
  EXPECT_EQ(child_sees(), "0");
  unsetenv("NCCL_NVLS_ENABLE");
}

}  // namespace
}  // namespace paceline::nccl
