#pragma once
// A Hugging Face-style model folder built by a test in a temporary directory: config.json from a
// fixture or shipped config with fields patched, and tokenizer files copied from third_party/.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace paceline::testing {

inline const std::filesystem::path kSourceDir(PACELINE_SOURCE_DIR);

inline nlohmann::json read_json_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  return nlohmann::json::parse(in);
}

class ModelFolder {
 public:
  explicit ModelFolder(const std::string& name) {
    // A parameterized test's name has a '/' ("Name/0"): one folder, not a folder in a folder
    // that the destructor would leave behind empty.
    std::string test = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    for (char& c : test) c = c == '/' ? '-' : c;
    dir_ = std::filesystem::temp_directory_path() /
           ("paceline-" + name + "-" + std::to_string(::getpid()) + "-" + test);
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  ~ModelFolder() { std::filesystem::remove_all(dir_); }

  // config.json: `base` (relative to the source tree) with `patch` merged in.
  void write_config(const std::string& base, const nlohmann::json& patch = nlohmann::json::object()) {
    nlohmann::json config = read_json_file(kSourceDir / base);
    config.merge_patch(patch);
    write("config.json", config.dump(2));
  }
  // tokenizer.json and tokenizer_config.json of third_party/<name>-tokenizer.
  void copy_tokenizer(const std::string& name) {
    for (const char* file : {"tokenizer.json", "tokenizer_config.json"}) {
      std::filesystem::copy_file(kSourceDir / "third_party" / (name + "-tokenizer") / file, dir_ / file,
                                 std::filesystem::copy_options::overwrite_existing);
    }
  }
  void write(const std::string& file, const std::string& text) const {
    std::ofstream(dir_ / file, std::ios::binary) << text;
  }
  const std::filesystem::path& path() const { return dir_; }
  std::string str() const { return dir_.string(); }

 private:
  std::filesystem::path dir_;
};

}  // namespace paceline::testing
