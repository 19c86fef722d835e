// `cmake --install` into a temporary prefix, then the installed binary serves from another
// working directory, with PACELINE_HOME unset and the source tree out of its reach: everything it
// needs (configs, the tokenizer) must come from the prefix. And the binary's build configures
// without GoogleTest and Google Benchmark (-DPACELINE_TESTS=OFF).
#include <gtest/gtest.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "server_process.h"

namespace paceline::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// A fresh folder under the system's temporary directory (outside the source tree, so that the
// binary's walk up from its own folder cannot reach the checkout's configs).
struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name) {
    path = fs::temp_directory_path() / (name + "-" + std::to_string(getpid()));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

std::pair<int, std::string> run(const std::string& command) {
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  std::string out;
  char buf[4096];
  while (pipe != nullptr && fgets(buf, sizeof(buf), pipe)) out += buf;
  const int status = pipe != nullptr ? pclose(pipe) : -1;
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

TEST(Install, TheInstalledBinaryServesFromAnywhere) {
  TempDir root("paceline-install-test");
  const fs::path prefix = root.path / "prefix";
  const fs::path elsewhere = root.path / "elsewhere";
  fs::create_directories(elsewhere);
  auto [rc, out] = run(std::string("'") + PACELINE_CMAKE + "' --install '" + PACELINE_BUILD_DIR +
                       "' --prefix '" + prefix.string() + "'");
  ASSERT_EQ(rc, 0) << out;
  const fs::path binary = prefix / "bin" / "paceline";
  ASSERT_TRUE(fs::exists(binary)) << out;
  EXPECT_TRUE(fs::exists(prefix / "share/paceline/configs/models/qwen3-tiny.json")) << out;
  EXPECT_TRUE(fs::exists(prefix / "share/paceline/configs/profiles/h200.json")) << out;
  EXPECT_TRUE(fs::exists(prefix / "share/paceline/third_party/qwen3-tokenizer/tokenizer.json"))
      << out;

  ServerLaunch launch{binary.string(), elsewhere.string(), /*unset_paceline_home=*/true};
  ServerProcess server({"--max-model-len", "512"}, "tiny", launch);
  json body = {{"messages", json::array({{{"role", "user"}, {"content", "Hello"}}})},
               {"max_tokens", 4},
               {"temperature", 0}};
  HttpReply r = http(server.port(), "POST", "/v1/chat/completions", body.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  json j = json::parse(r.body);
  EXPECT_EQ(j["usage"]["completion_tokens"], 4);
  EXPECT_TRUE(j["choices"][0]["message"]["content"].is_string());
  // The tokenizer it serves with is the installed Qwen3 one.
  HttpReply t = http(server.port(), "POST", "/tokenize", R"({"prompt":"Hello world"})");
  ASSERT_EQ(t.status, 200) << t.body;
  EXPECT_EQ(json::parse(t.body)["tokens"], json::array({9707, 1879}));
}

TEST(Install, TheBinaryConfiguresWithoutTestDependencies) {
  TempDir build("paceline-notests-build");
  auto [rc, out] = run(std::string("'") + PACELINE_CMAKE + "' -S '" + PACELINE_SOURCE_DIR +
                       "' -B '" + build.path.string() +
                       "' -G Ninja -DPACELINE_TESTS=OFF -DPACELINE_CUDA=OFF"
                       " -DCMAKE_DISABLE_FIND_PACKAGE_GTest=ON"
                       " -DCMAKE_DISABLE_FIND_PACKAGE_benchmark=ON");
  ASSERT_EQ(rc, 0) << out;
  std::ifstream ninja(build.path / "build.ninja");
  std::stringstream text;
  text << ninja.rdbuf();
  EXPECT_NE(text.str().find("build paceline:"), std::string::npos);
  EXPECT_EQ(text.str().find("gtest"), std::string::npos);
  EXPECT_EQ(text.str().find("benchmark::"), std::string::npos);
}

}  // namespace
}  // namespace paceline::testing
