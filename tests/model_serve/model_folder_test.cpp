// A test's model folder (model_folder.h) leaves nothing in the temporary directory, in a
// parameterized test too, whose name ("Name/0") has a '/'.
#include "model_folder.h"

#include <filesystem>

#include <gtest/gtest.h>

namespace paceline::testing {
namespace {

class ModelFolderInAParameterizedTest : public ::testing::TestWithParam<int> {};

TEST_P(ModelFolderInAParameterizedTest, LeavesNothingBehind) {
  const std::filesystem::path tmp = std::filesystem::temp_directory_path();
  std::filesystem::path top;  // what the folder made directly in the temporary directory
  {
    ModelFolder folder("model-folder-test");
    folder.write("config.json", "{}");
    top = tmp / *folder.path().lexically_relative(tmp).begin();
    EXPECT_TRUE(std::filesystem::exists(top));
  }
  EXPECT_FALSE(std::filesystem::exists(top)) << top << " was left behind";
}

INSTANTIATE_TEST_SUITE_P(One, ModelFolderInAParameterizedTest, ::testing::Values(0));

}  // namespace
}  // namespace paceline::testing
