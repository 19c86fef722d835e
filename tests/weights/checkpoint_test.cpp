// load_safetensors_weights: Hugging Face checkpoint folders, single files and sharded indexes,
// checked tensor by tensor against the config.
#include <gtest/gtest.h>

#include <cstring>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "model/config.h"
#include "model/weights.h"
#include "safetensors_writer.h"

namespace paceline {
namespace {

using nlohmann::json;
using testing::TempDir;
using testing::TestTensor;

// A Qwen3 small enough to write in a test: 2 layers, GQA 2:1, tied embeddings.
ModelConfig mini_config(bool tied = true) {
  json config = {
      {"model_type", "qwen3"},    {"vocab_size", 64},       {"hidden_size", 16},
      {"intermediate_size", 32},  {"num_hidden_layers", 2}, {"num_attention_heads", 2},
      {"num_key_value_heads", 1}, {"head_dim", 8},          {"tie_word_embeddings", tied}};
  ModelConfig c = model_config_from_json(config.dump(), "mini/config.json");
  c.name = "mini";
  return c;
}

// Every tensor the config expects, filled from dummy weights in bf16.
std::vector<TestTensor> checkpoint_tensors(const ModelConfig& config) {
  auto source = make_dummy_weights(config, 7, DType::kBF16);
  std::vector<TestTensor> tensors;
  for (const ExpectedTensor& e : expected_tensors(config)) {
    const TensorView& view = source->get(e.name);
    std::string bytes(static_cast<const char*>(view.data), static_cast<size_t>(view.nbytes()));
    tensors.push_back({e.name, "BF16", e.shape, bytes});
  }
  return tensors;
}

std::vector<TestTensor> without(std::vector<TestTensor> tensors, const std::string& name) {
  std::erase_if(tensors, [&](const TestTensor& t) { return t.name == name; });
  return tensors;
}

std::string load_error(const std::string& path, const ModelConfig& config) {
  try {
    load_safetensors_weights(path, config);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

void expect_same_bits(const Weights& weights, const std::vector<TestTensor>& tensors) {
  for (const TestTensor& t : tensors) {
    const TensorView& view = weights.get(t.name);
    EXPECT_EQ(view.shape, t.shape) << t.name;
    ASSERT_EQ(static_cast<size_t>(view.nbytes()), t.bytes.size()) << t.name;
    EXPECT_EQ(std::memcmp(view.data, t.bytes.data(), t.bytes.size()), 0) << t.name;
  }
}

TEST(Checkpoint, LoadsAFolderWithModelSafetensors) {
  ModelConfig config = mini_config();
  std::vector<TestTensor> tensors = checkpoint_tensors(config);
  std::vector<TestTensor> with_extra = tensors;
  with_extra.push_back({"model.layers.0.self_attn.rotary_emb.inv_freq",
                        "F32",
                        {4},
                        testing::f32_bytes({1, 2, 3, 4})});
  TempDir dir;
  testing::write_file(dir / "model.safetensors", testing::safetensors_image(with_extra));

  auto weights = load_safetensors_weights(dir.path().string(), config);
  expect_same_bits(*weights, tensors);
  EXPECT_FALSE(weights->has("lm_head.weight"));  // tied: embed_tokens serves as the head
  EXPECT_TRUE(weights->has("model.layers.0.self_attn.rotary_emb.inv_freq"));  // extra, ignored
  EXPECT_THROW(weights->get("lm_head.weight"), Error);

  auto single = load_safetensors_weights((dir / "model.safetensors").string(), config);
  expect_same_bits(*single, tensors);
}

TEST(Checkpoint, LoadsShardsListedInTheIndex) {
  ModelConfig config = mini_config(/*tied=*/false);
  std::vector<TestTensor> tensors = checkpoint_tensors(config);
  std::vector<TestTensor> first(tensors.begin(), tensors.begin() + 7);
  std::vector<TestTensor> second(tensors.begin() + 7, tensors.end());
  TempDir dir;
  testing::write_file(dir / "model-00001-of-00002.safetensors", testing::safetensors_image(first));
  testing::write_file(dir / "model-00002-of-00002.safetensors", testing::safetensors_image(second));
  json index = {{"metadata", {{"total_size", 0}}}, {"weight_map", json::object()}};
  for (const TestTensor& t : first)
    index["weight_map"][t.name] = "model-00001-of-00002.safetensors";
  for (const TestTensor& t : second)
    index["weight_map"][t.name] = "model-00002-of-00002.safetensors";
  testing::write_file(dir / "model.safetensors.index.json", index.dump(2));

  expect_same_bits(*load_safetensors_weights(dir.path().string(), config), tensors);
  expect_same_bits(
      *load_safetensors_weights((dir / "model.safetensors.index.json").string(), config), tensors);
}

TEST(Checkpoint, UntiedConfigsNeedLmHead) {
  ModelConfig config = mini_config(/*tied=*/false);
  TempDir dir;
  testing::write_file(
      dir / "model.safetensors",
      testing::safetensors_image(without(checkpoint_tensors(config), "lm_head.weight")));
  std::string message = load_error(dir.path().string(), config);
  EXPECT_NE(message.find("tensor 'lm_head.weight' is missing (model mini needs it)"),
            std::string::npos)
      << message;
}

TEST(Checkpoint, MissingTensorNamesFileAndTensor) {
  ModelConfig config = mini_config();
  TempDir dir;
  const std::string name = "model.layers.1.self_attn.k_norm.weight";
  testing::write_file(dir / "model.safetensors",
                      testing::safetensors_image(without(checkpoint_tensors(config), name)));
  std::string message = load_error((dir / "model.safetensors").string(), config);
  EXPECT_NE(message.find("model.safetensors: tensor '" + name + "' is missing"), std::string::npos)
      << message;
}

TEST(Checkpoint, WrongShapeAgainstTheConfigNamesFileTensorAndShapes) {
  ModelConfig config = mini_config();
  std::vector<TestTensor> tensors = checkpoint_tensors(config);
  for (TestTensor& t : tensors) {
    if (t.name == "model.layers.0.mlp.up_proj.weight") t.shape = {16, 32};  // transposed
  }
  TempDir dir;
  testing::write_file(dir / "model.safetensors", testing::safetensors_image(tensors));
  std::string message = load_error(dir.path().string(), config);
  EXPECT_NE(message.find("model.safetensors: tensor 'model.layers.0.mlp.up_proj.weight' has "
                         "shape [16, 32], model mini expects [32, 16]"),
            std::string::npos)
      << message;
}

TEST(Checkpoint, ShardingErrorsNameTheShardAndTensor) {
  ModelConfig config = mini_config();
  std::vector<TestTensor> tensors = checkpoint_tensors(config);
  TempDir dir;
  testing::write_file(dir / "a.safetensors", testing::safetensors_image(tensors));
  json index = {{"weight_map", json::object()}};
  for (const TestTensor& t : tensors) index["weight_map"][t.name] = "a.safetensors";
  index["weight_map"]["model.norm.weight"] = "b.safetensors";  // listed, never written
  testing::write_file(dir / "model.safetensors.index.json", index.dump());
  std::string message = load_error(dir.path().string(), config);
  EXPECT_NE(message.find("b.safetensors: shard listed in the index for tensor "
                         "'model.norm.weight' does not exist"),
            std::string::npos)
      << message;

  // The same tensor in two shards.
  testing::write_file(dir / "b.safetensors",
                      testing::safetensors_image({tensors.back()}));  // model.norm.weight again
  message = load_error(dir.path().string(), config);
  EXPECT_NE(message.find("tensor 'model.norm.weight' is also in"), std::string::npos) << message;

  // A shard outside the checkpoint folder.
  index["weight_map"]["model.norm.weight"] = "../b.safetensors";
  testing::write_file(dir / "model.safetensors.index.json", index.dump());
  message = load_error(dir.path().string(), config);
  EXPECT_NE(message.find("tensor 'model.norm.weight': shard '../b.safetensors'"), std::string::npos)
      << message;

  testing::write_file(dir / "model.safetensors.index.json", R"({"metadata": {}})");
  message = load_error(dir.path().string(), config);
  EXPECT_NE(message.find("model.safetensors.index.json: no \"weight_map\""), std::string::npos)
      << message;
}

TEST(Checkpoint, MalformedShardIsReportedByName) {
  ModelConfig config = mini_config();
  TempDir dir;
  testing::write_file(dir / "model.safetensors", "garbage!");
  std::string message = load_error(dir.path().string(), config);
  EXPECT_NE(message.find("model.safetensors"), std::string::npos) << message;
}

TEST(Checkpoint, MissingPathsAreErrors) {
  ModelConfig config = mini_config();
  TempDir dir;
  EXPECT_NE(load_error(dir.path().string(), config).find("neither model.safetensors"),
            std::string::npos);
  EXPECT_NE(load_error((dir / "nope").string(), config).find("no such checkpoint"),
            std::string::npos);
}

}  // namespace
}  // namespace paceline
