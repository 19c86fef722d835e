// Finding a config: a path, a folder, or a shipped name under configs/models/.
#include <algorithm>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/error.h"
#include "base/resources.h"
#include "model/config.h"

namespace paceline {
namespace {

namespace fs = std::filesystem;

// Where shipped configs may live: configs/models under each resource root (base/resources.h).
std::vector<fs::path> shipped_config_dirs() {
  std::vector<fs::path> dirs;
  for (const fs::path& root : resource_roots()) dirs.push_back(root / "configs" / "models");
  return dirs;
}

bool is_file(const fs::path& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec);
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("{}: cannot read the model config", path.string());
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) fail("{}: error reading the model config", path.string());
  return text.str();
}

// The name a config goes by: the file's stem, or its folder's name for a folder's config.json.
std::string name_of(const fs::path& file) {
  if (file.filename() == "config.json") {
    std::error_code ec;
    fs::path folder = fs::absolute(file, ec).parent_path().filename();
    if (!ec && !folder.empty()) return folder.string();
  }
  return file.stem().string();
}

}  // namespace

fs::path model_config_resolve(const std::string& path_or_name) {
  if (path_or_name.empty()) fail("model config: empty name (try 'tiny' or a config.json path)");
  fs::path path(path_or_name);
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    if (!is_file(path / "config.json")) fail("{}: folder has no config.json", path_or_name);
    return path / "config.json";
  }
  if (is_file(path)) return path;
  bool looks_like_path = path_or_name.find('/') != std::string::npos || path.extension() == ".json";
  if (looks_like_path) fail("{}: no such model config file or folder", path_or_name);

  std::string name = path_or_name == "tiny" ? "qwen3-tiny" : path_or_name;
  std::vector<fs::path> dirs = shipped_config_dirs();
  for (const fs::path& dir : dirs) {
    if (is_file(dir / (name + ".json"))) return dir / (name + ".json");
  }
  std::vector<std::string> searched;
  for (const fs::path& dir : dirs) searched.push_back(dir.string());
  fail(
      "unknown model '{}': not a file or folder, and no shipped config of that name (shipped: "
      "{}; searched: {}; set PACELINE_HOME to the paceline folder)",
      path_or_name, fmt::join(model_config_shipped_names(), ", "), fmt::join(searched, ", "));
}

ModelConfig model_config_load(const std::string& path_or_name) {
  fs::path file = model_config_resolve(path_or_name);
  ModelConfig config = model_config_from_json(read_text(file), file.string());
  config.name = name_of(file);
  return config;
}

std::vector<std::string> model_config_shipped_names() {
  std::vector<std::string> names;
  for (const fs::path& dir : shipped_config_dirs()) {
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      if (it->path().extension() == ".json") names.push_back(it->path().stem().string());
    }
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

}  // namespace paceline
