// load_safetensors_weights: a checkpoint folder (one file or shards), checked against the config.
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "model/safetensors.h"
#include "model/weights.h"

namespace paceline {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class SafetensorsWeights final : public Weights {
 public:
  explicit SafetensorsWeights(std::string where) : where_(std::move(where)) {}

  const TensorView& get(const std::string& name) const override {
    auto it = tensors_.find(name);
    if (it == tensors_.end()) fail("{}: tensor '{}' is not in the checkpoint", where_, name);
    return it->second.view;
  }
  bool has(const std::string& name) const override { return tensors_.count(name) != 0; }

  // Adds every tensor of one file; a name already seen in another shard is an error.
  void add_file(std::unique_ptr<SafetensorsFile> file) {
    for (const auto& [name, view] : file->tensors()) {
      auto [it, added] = tensors_.emplace(name, Entry{view, &file->path()});
      if (!added) {
        fail("{}: tensor '{}' is also in {}: shards must not repeat a tensor", file->path(), name,
             *it->second.file);
      }
    }
    files_.push_back(std::move(file));
  }

  // Which file holds the tensor, for error messages.
  const std::string& file_of(const std::string& name) const { return *tensors_.at(name).file; }

 private:
  struct Entry {
    TensorView view;
    const std::string* file;  // owned by files_
  };
  std::string where_;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, Entry> tensors_;
};

// The shard files an index lists, in first-mention order, each with one tensor it should hold
// (to name in the error when the shard is missing). Shards must sit next to the index.
std::vector<std::pair<fs::path, std::string>> shards_of_index(const fs::path& index) {
  std::ifstream in(index, std::ios::binary);
  if (!in) fail("{}: cannot read the safetensors index", index.string());
  std::ostringstream text;
  text << in.rdbuf();
  json root;
  try {
    root = json::parse(text.str());
  } catch (const json::exception& e) {
    fail("{}: not valid JSON: {}", index.string(), e.what());
  }
  auto map_it = root.is_object() ? root.find("weight_map") : root.end();
  if (!root.is_object() || map_it == root.end() || !map_it->is_object()) {
    fail("{}: no \"weight_map\" object (tensor name -> shard file)", index.string());
  }
  std::vector<std::pair<fs::path, std::string>> shards;
  std::set<std::string> seen;
  for (const auto& [tensor, shard] : map_it->items()) {
    if (!shard.is_string())
      fail("{}: tensor '{}': shard must be a file name", index.string(), tensor);
    std::string file = shard.get<std::string>();
    if (file.empty() || file.find('/') != std::string::npos || file == "." || file == "..") {
      fail("{}: tensor '{}': shard '{}' must be a plain file name next to the index",
           index.string(), tensor, file);
    }
    if (seen.insert(file).second) shards.emplace_back(index.parent_path() / file, tensor);
  }
  return shards;
}

std::vector<std::pair<fs::path, std::string>> checkpoint_files(const std::string& path) {
  fs::path p(path);
  std::error_code ec;
  if (fs::is_directory(p, ec)) {
    if (fs::exists(p / "model.safetensors.index.json", ec)) {
      return shards_of_index(p / "model.safetensors.index.json");
    }
    if (fs::exists(p / "model.safetensors", ec)) return {{p / "model.safetensors", ""}};
    fail("{}: folder has neither model.safetensors nor model.safetensors.index.json", path);
  }
  if (!fs::exists(p, ec)) fail("{}: no such checkpoint file or folder", path);
  if (std::string_view(path).ends_with(".index.json")) return shards_of_index(p);
  return {{p, ""}};
}

}  // namespace

std::unique_ptr<Weights> load_safetensors_weights(const std::string& path,
                                                  const ModelConfig& config) {
  const std::string model = config.name.empty() ? "the config" : "model " + config.name;
  auto weights = std::make_unique<SafetensorsWeights>(path);
  for (const auto& [file, some_tensor] : checkpoint_files(path)) {
    std::error_code ec;
    if (!some_tensor.empty() && !fs::exists(file, ec)) {
      fail("{}: shard listed in the index for tensor '{}' does not exist", file.string(),
           some_tensor);
    }
    weights->add_file(std::make_unique<SafetensorsFile>(file.string()));
  }
  for (const ExpectedTensor& expected : expected_tensors(config)) {
    if (!weights->has(expected.name)) {
      fail("{}: tensor '{}' is missing ({} needs it)", path, expected.name, model);
    }
    const TensorView& view = weights->get(expected.name);
    if (view.shape != expected.shape) {
      fail("{}: tensor '{}' has shape [{}], {} expects [{}]", weights->file_of(expected.name),
           expected.name, fmt::join(view.shape, ", "), model, fmt::join(expected.shape, ", "));
    }
  }
  return weights;
}

}  // namespace paceline
