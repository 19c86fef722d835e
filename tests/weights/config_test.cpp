// ModelConfig: the shipped configs carry the published shapes, and config.json files in both the
// transformers 4.x and 5.x layouts parse; bad fields fail with the file and field named.
#include "model/config.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "model/weights.h"
#include "safetensors_writer.h"

namespace paceline {
namespace {

using nlohmann::json;

const std::string kModels = std::string(PACELINE_SOURCE_DIR) + "/configs/models/";

json shipped_json(const std::string& name) {
  std::ifstream in(kModels + name + ".json");
  std::stringstream text;
  text << in.rdbuf();
  return json::parse(text.str());
}

ModelConfig parse(const json& config) {
  return model_config_from_json(config.dump(), "test/config.json");
}

// The error message parsing `config` gives; empty when it parses.
std::string parse_error(const json& config) {
  try {
    parse(config);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

struct PublishedShape {
  const char* name;
  ModelArch arch;
  int64_t hidden, intermediate, layers, heads, kv_heads, head_dim, vocab, max_positions;
  double rope_theta;
  bool tied;
};

// From each model's config.json on the Hugging Face Hub (Qwen/Qwen3-*, meta-llama/*-Instruct).
const PublishedShape kShapes[] = {
    {"qwen3-0.6b", ModelArch::kQwen3, 1024, 3072, 28, 16, 8, 128, 151936, 40960, 1e6, true},
    {"qwen3-1.7b", ModelArch::kQwen3, 2048, 6144, 28, 16, 8, 128, 151936, 40960, 1e6, true},
    {"qwen3-4b", ModelArch::kQwen3, 2560, 9728, 36, 32, 8, 128, 151936, 40960, 1e6, true},
    {"qwen3-8b", ModelArch::kQwen3, 4096, 12288, 36, 32, 8, 128, 151936, 40960, 1e6, false},
    {"qwen3-14b", ModelArch::kQwen3, 5120, 17408, 40, 40, 8, 128, 151936, 40960, 1e6, false},
    {"qwen3-32b", ModelArch::kQwen3, 5120, 25600, 64, 64, 8, 128, 151936, 40960, 1e6, false},
    {"llama-3.2-1b", ModelArch::kLlama, 2048, 8192, 16, 32, 8, 64, 128256, 131072, 5e5, true},
    {"llama-3.1-8b", ModelArch::kLlama, 4096, 14336, 32, 32, 8, 128, 128256, 131072, 5e5, false},
    {"qwen3-tiny", ModelArch::kQwen3, 128, 384, 4, 4, 2, 32, 151936, 40960, 1e6, true},
    // Qwen3-8B with the model card's YaRN (factor 4 over 32768): 131072 positions.
    {"qwen3-8b-yarn", ModelArch::kQwen3, 4096, 12288, 36, 32, 8, 128, 151936, 131072, 1e6, false},
};

TEST(ShippedConfigs, CarryThePublishedShapes) {
  for (const PublishedShape& s : kShapes) {
    SCOPED_TRACE(s.name);
    ModelConfig c = model_config_load(s.name);
    EXPECT_EQ(c.name, s.name);
    EXPECT_EQ(c.arch, s.arch);
    EXPECT_EQ(c.qk_norm, s.arch == ModelArch::kQwen3);
    EXPECT_EQ(c.hidden_size, s.hidden);
    EXPECT_EQ(c.intermediate_size, s.intermediate);
    EXPECT_EQ(c.num_hidden_layers, s.layers);
    EXPECT_EQ(c.num_attention_heads, s.heads);
    EXPECT_EQ(c.num_key_value_heads, s.kv_heads);
    EXPECT_EQ(c.head_dim, s.head_dim);
    EXPECT_EQ(c.vocab_size, s.vocab);
    EXPECT_EQ(c.max_position_embeddings, s.max_positions);
    EXPECT_EQ(c.rope_theta, s.rope_theta);
    EXPECT_EQ(c.tie_word_embeddings, s.tied);
    EXPECT_EQ(c.torch_dtype, "bfloat16");
  }
}

TEST(ShippedConfigs, QwenStopsAtImEndAndLlamaAtItsThreeEndTokens) {
  ModelConfig qwen = model_config_load("qwen3-8b");
  EXPECT_EQ(qwen.eos_token_ids, std::vector<int64_t>{151645});
  EXPECT_EQ(qwen.bos_token_id, 151643);
  EXPECT_FALSE(qwen.rope_scaling.has_value());
  EXPECT_DOUBLE_EQ(qwen.rms_norm_eps, 1e-6);

  ModelConfig llama = model_config_load("llama-3.1-8b");
  EXPECT_EQ(llama.eos_token_ids, (std::vector<int64_t>{128001, 128008, 128009}));
  EXPECT_EQ(llama.bos_token_id, 128000);
  EXPECT_DOUBLE_EQ(llama.rms_norm_eps, 1e-5);
}

TEST(ShippedConfigs, TinyIsQwen3TinyWithTheRealVocabulary) {
  ModelConfig tiny = model_config_load("tiny");
  EXPECT_EQ(tiny.name, "qwen3-tiny");
  EXPECT_EQ(tiny.vocab_size, 151936);
  EXPECT_EQ(tiny.eos_token_ids, (std::vector<int64_t>{151645, 151643}));
  EXPECT_LT(tiny.num_parameters(), 25'000'000);
}

TEST(ShippedConfigs, ListsTheShippedNames) {
  std::vector<std::string> names = model_config_shipped_names();
  for (const PublishedShape& s : kShapes) {
    EXPECT_NE(std::find(names.begin(), names.end(), s.name), names.end()) << s.name;
  }
}

// Model cards: Qwen3 gives totals to 0.1B and non-embedding counts; Llama totals to 0.01B.
struct PublishedCount {
  const char* name;
  double total;
  double total_rounding;  // half the last published digit
  double non_embedding;   // 0: not published
};
const PublishedCount kCounts[] = {
    {"qwen3-0.6b", 0.6e9, 0.05e9, 0.44e9}, {"qwen3-1.7b", 1.7e9, 0.05e9, 1.4e9},
    {"qwen3-4b", 4.0e9, 0.05e9, 3.6e9},    {"qwen3-8b", 8.2e9, 0.05e9, 6.95e9},
    {"qwen3-14b", 14.8e9, 0.05e9, 13.2e9}, {"qwen3-32b", 32.8e9, 0.05e9, 31.2e9},
    {"qwen3-8b-yarn", 8.2e9, 0.05e9, 6.95e9},
    {"llama-3.2-1b", 1.24e9, 0.005e9, 0},  {"llama-3.1-8b", 8.03e9, 0.005e9, 0},
};

TEST(ShippedConfigs, HaveThePublishedParameterCounts) {
  for (const PublishedCount& p : kCounts) {
    SCOPED_TRACE(p.name);
    ModelConfig c = model_config_load(p.name);
    auto n = static_cast<double>(c.num_parameters());
    // Within 1%, or within the published figure's rounding where that is coarser (1.7B).
    EXPECT_LE(std::fabs(n - p.total), std::max(0.01 * p.total, p.total_rounding)) << n;
    if (p.non_embedding > 0) {
      double embeddings =
          static_cast<double>(c.vocab_size * c.hidden_size) * (c.tie_word_embeddings ? 1 : 2);
      EXPECT_LE(std::fabs(n - embeddings - p.non_embedding), 0.01 * p.non_embedding) << n;
    }
  }
}

TEST(ModelConfig, NumParametersIsTheSumOfTheExpectedTensors) {
  for (const char* name : {"qwen3-tiny", "qwen3-8b", "llama-3.2-1b", "llama-3.1-8b"}) {
    ModelConfig c = model_config_load(name);
    int64_t sum = 0;
    for (const ExpectedTensor& t : expected_tensors(c)) {
      int64_t n = 1;
      for (int64_t d : t.shape) n *= d;
      sum += n;
    }
    EXPECT_EQ(c.num_parameters(), sum) << name;
  }
}

TEST(ModelConfig, Llama3RopeScalingParses) {
  ModelConfig c = model_config_load("llama-3.2-1b");
  ASSERT_TRUE(c.rope_scaling.has_value());
  EXPECT_EQ(c.rope_scaling->factor, 32.0);
  EXPECT_EQ(c.rope_scaling->low_freq_factor, 1.0);
  EXPECT_EQ(c.rope_scaling->high_freq_factor, 4.0);
  EXPECT_EQ(c.rope_scaling->original_max_position_embeddings, 8192);
  EXPECT_EQ(model_config_load("llama-3.1-8b").rope_scaling->factor, 8.0);
}

TEST(ModelConfig, LegacyTypeKeyNamesTheRopeType) {
  json config = shipped_json("llama-3.1-8b");
  config["rope_scaling"].erase("rope_type");
  config["rope_scaling"]["type"] = "llama3";
  EXPECT_EQ(parse(config).rope_scaling->factor, 8.0);
}

TEST(ModelConfig, TransformersFiveRopeParametersParse) {
  json llama = shipped_json("llama-3.1-8b");
  llama.erase("rope_scaling");
  llama.erase("rope_theta");
  llama["rope_parameters"] = {
      {"rope_type", "llama3"},   {"rope_theta", 500000.0},
      {"factor", 8.0},           {"low_freq_factor", 1.0},
      {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 8192}};
  ModelConfig c = parse(llama);
  EXPECT_EQ(c.rope_theta, 500000.0);
  ASSERT_TRUE(c.rope_scaling.has_value());
  EXPECT_EQ(c.rope_scaling->factor, 8.0);

  json qwen = shipped_json("qwen3-8b");
  qwen.erase("rope_scaling");
  qwen.erase("rope_theta");
  qwen.erase("torch_dtype");
  qwen["dtype"] = "bfloat16";
  qwen["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 1000000}};
  c = parse(qwen);
  EXPECT_EQ(c.rope_theta, 1e6);
  EXPECT_FALSE(c.rope_scaling.has_value());
}

TEST(ModelConfig, Qwen3YarnFromTheModelCardServes131072Tokens) {
  ModelConfig c = model_config_load("qwen3-8b-yarn");
  ASSERT_TRUE(c.rope_scaling.has_value());
  const RopeScaling& s = *c.rope_scaling;
  EXPECT_EQ(s.type, RopeType::kYarn);
  EXPECT_EQ(s.factor, 4.0);
  EXPECT_EQ(s.original_max_position_embeddings, 32768);
  EXPECT_EQ(s.beta_fast, 32.0);
  EXPECT_EQ(s.beta_slow, 1.0);
  EXPECT_TRUE(s.truncate);
  EXPECT_FALSE(s.attention_factor || s.mscale || s.mscale_all_dim);
  // The file says 40960; YaRN stretches 32768 by 4, and that longer length is the model's.
  EXPECT_EQ(shipped_json("qwen3-8b-yarn")["max_position_embeddings"], 40960);
  EXPECT_EQ(c.max_position_embeddings, 131072);
  EXPECT_EQ(model_config_load("qwen3-8b").max_position_embeddings, 40960);
}

TEST(ModelConfig, YarnParsesInEveryLayoutWithItsOptionalFields) {
  json base = shipped_json("qwen3-8b");
  json yarn = {{"rope_type", "yarn"},  {"factor", 8.0},     {"original_max_position_embeddings", 4096},
               {"beta_fast", 16},      {"beta_slow", 2.5},  {"truncate", false},
               {"mscale", 0.707},      {"mscale_all_dim", 1}, {"attention_factor", 1.5}};
  auto check = [](const ModelConfig& c) {
    ASSERT_TRUE(c.rope_scaling.has_value());
    const RopeScaling& s = *c.rope_scaling;
    EXPECT_EQ(s.type, RopeType::kYarn);
    EXPECT_EQ(s.factor, 8.0);
    EXPECT_EQ(s.original_max_position_embeddings, 4096);
    EXPECT_EQ(s.beta_fast, 16.0);
    EXPECT_EQ(s.beta_slow, 2.5);
    EXPECT_FALSE(s.truncate);
    EXPECT_EQ(s.mscale, 0.707);
    EXPECT_EQ(s.mscale_all_dim, 1.0);
    EXPECT_EQ(s.attention_factor, 1.5);
    EXPECT_EQ(c.max_position_embeddings, 40960);  // 4096 x 8 = 32768 is shorter than the file's
  };
  json legacy = base;
  legacy["rope_scaling"] = yarn;
  check(parse(legacy));
  legacy["rope_scaling"].erase("rope_type");
  legacy["rope_scaling"]["type"] = "yarn";  // transformers 4.x's older key
  check(parse(legacy));
  json five = base;  // transformers 5.x: rope_parameters, theta inside
  five.erase("rope_scaling");
  five.erase("rope_theta");
  five["rope_parameters"] = yarn;
  five["rope_parameters"]["rope_theta"] = 1e6;
  check(parse(five));
  json top = base;  // Phi-3's layout: original_max_position_embeddings beside max_position_embeddings
  top["rope_scaling"] = yarn;
  top["rope_scaling"].erase("original_max_position_embeddings");
  top["original_max_position_embeddings"] = 4096;
  check(parse(top));
  top["rope_scaling"]["original_max_position_embeddings"] = 4096;  // both, agreeing
  check(parse(top));
}

TEST(ModelConfig, YarnContextIsTheLongerOfTheFileAndTheStretchedLength) {
  json config = shipped_json("qwen3-8b");
  config["rope_scaling"] = {
      {"rope_type", "yarn"}, {"factor", 2.5}, {"original_max_position_embeddings", 32768}};
  EXPECT_EQ(parse(config).max_position_embeddings, 81920);
  config["rope_scaling"]["factor"] = 1.0;
  EXPECT_EQ(parse(config).max_position_embeddings, 40960);
  config["rope_scaling"]["factor"] = 1.1;  // 36044.8: below the file's 40960
  EXPECT_EQ(parse(config).max_position_embeddings, 40960);
  config["rope_scaling"]["factor"] = 3.00001;  // 98304.3: whole positions only
  EXPECT_EQ(parse(config).max_position_embeddings, 98304);
}

TEST(ModelConfig, BadYarnFieldsAreErrorsNamingTheField) {
  struct Case {
    const char* what;
    json patch;  // merged into qwen3-8b-yarn.json; null values delete fields
    const char* expected;
  };
  const Case cases[] = {
      {"no factor", {{"rope_scaling", {{"factor", nullptr}}}}, "'rope_scaling.factor' is missing"},
      {"factor below 1", {{"rope_scaling", {{"factor", 0.5}}}},
       "'rope_scaling.factor' must be at least 1"},
      {"factor zero", {{"rope_scaling", {{"factor", 0}}}}, "'rope_scaling.factor' must be a positive"},
      {"factor as text", {{"rope_scaling", {{"factor", "4"}}}}, "'rope_scaling.factor' must be a number"},
      {"no original length",
       {{"rope_scaling", {{"original_max_position_embeddings", nullptr}}}},
       "'rope_scaling.original_max_position_embeddings' is missing"},
      {"zero original length",
       {{"rope_scaling", {{"original_max_position_embeddings", 0}}}},
       "'rope_scaling.original_max_position_embeddings' must be between 1 and"},
      {"original longer than the model",
       {{"rope_scaling", {{"original_max_position_embeddings", 65536}}}},
       "'rope_scaling.original_max_position_embeddings' (65536) must not exceed "
       "max_position_embeddings (40960)"},
      {"original twice, disagreeing",
       {{"original_max_position_embeddings", 16384}},
       "'rope_scaling.original_max_position_embeddings' (32768) contradicts the top-level "
       "original_max_position_embeddings (16384)"},
      {"stretched beyond 2^30",
       {{"rope_scaling", {{"factor", 1e6}}}},
       "'rope_scaling.factor' (1000000) times original_max_position_embeddings (32768) exceeds"},
      {"beta_fast below beta_slow",
       {{"rope_scaling", {{"beta_fast", 1}, {"beta_slow", 32}}}},
       "'rope_scaling.beta_fast' (1) must not be less than beta_slow (32)"},
      {"negative beta", {{"rope_scaling", {{"beta_slow", -1}}}}, "'rope_scaling.beta_slow' must be"},
      {"zero attention factor",
       {{"rope_scaling", {{"attention_factor", 0}}}},
       "'rope_scaling.attention_factor' must be a positive number"},
      {"negative mscale", {{"rope_scaling", {{"mscale", -0.5}}}}, "'rope_scaling.mscale' must be"},
      {"mscale_all_dim as text",
       {{"rope_scaling", {{"mscale_all_dim", "1"}}}},
       "'rope_scaling.mscale_all_dim' must be a number"},
      {"truncate as text", {{"rope_scaling", {{"truncate", "no"}}}}, "'rope_scaling.truncate' must be true"},
      {"rope_type and type disagree",
       {{"rope_scaling", {{"type", "llama3"}}}},
       "'rope_scaling.rope_type' ('yarn') contradicts field 'rope_scaling.type' ('llama3')"},
      {"rope_parameters without factor",
       {{"rope_scaling", nullptr},
        {"rope_parameters", {{"rope_type", "yarn"}, {"original_max_position_embeddings", 32768}}}},
       "'rope_parameters.factor' is missing"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    json config = shipped_json("qwen3-8b-yarn");
    config.merge_patch(c.patch);
    std::string message = parse_error(config);
    EXPECT_NE(message.find("test/config.json"), std::string::npos) << message;
    EXPECT_NE(message.find(c.expected), std::string::npos) << message;
  }
}

TEST(ModelConfig, OptionalFieldsTakeTheirDefaults) {
  json config = shipped_json("qwen3-tiny");
  config.erase("num_key_value_heads");
  config.erase("head_dim");
  config.erase("bos_token_id");
  config.erase("rope_scaling");
  config["eos_token_id"] = 151645;
  ModelConfig c = parse(config);
  EXPECT_EQ(c.num_key_value_heads, c.num_attention_heads);
  EXPECT_EQ(c.head_dim, 128 / 4);
  EXPECT_FALSE(c.bos_token_id.has_value());
  EXPECT_EQ(c.eos_token_ids, std::vector<int64_t>{151645});
  EXPECT_FALSE(c.rope_scaling.has_value());
}

// Transformers loads a config whose eos_token_id lies outside the vocabulary; such an id can never
// be sampled, so it is dropped (with a warning) and the ids inside are kept.
TEST(ModelConfig, EosTokenIdOutsideTheVocabularyIsDroppedNotRefused) {
  json config = shipped_json("qwen3-tiny");
  config["eos_token_id"] = json::array({200000, 151645});
  EXPECT_EQ(parse(config).eos_token_ids, std::vector<int64_t>{151645});
  config["eos_token_id"] = 200000;
  EXPECT_TRUE(parse(config).eos_token_ids.empty());
}

TEST(ModelConfig, ArchitecturesStandInForAMissingModelType) {
  json config = shipped_json("llama-3.2-1b");
  config.erase("model_type");
  EXPECT_EQ(parse(config).arch, ModelArch::kLlama);
  config = shipped_json("qwen3-tiny");
  config.erase("model_type");
  ModelConfig c = parse(config);
  EXPECT_EQ(c.arch, ModelArch::kQwen3);
  EXPECT_TRUE(c.qk_norm);
}

TEST(ModelConfig, BadFieldsNameTheFileAndTheField) {
  struct Case {
    const char* what;
    json patch;  // merged into qwen3-tiny.json; null values delete fields
    const char* expected;
  };
  const Case cases[] = {
      {"zero size", {{"hidden_size", 0}}, "'hidden_size' must be between 1 and"},
      {"string size", {{"hidden_size", "128"}}, "'hidden_size' must be an integer"},
      {"negative layers", {{"num_hidden_layers", -1}}, "'num_hidden_layers'"},
      {"missing vocab", {{"vocab_size", nullptr}}, "'vocab_size' is missing"},
      {"kv not dividing heads", {{"num_key_value_heads", 3}}, "num_key_value_heads (3)"},
      {"more kv than heads", {{"num_key_value_heads", 8}}, "'num_key_value_heads'"},
      {"odd head_dim", {{"head_dim", 33}}, "head_dim (33) must be even"},
      {"unknown model_type", {{"model_type", "gpt2"}}, "model_type 'gpt2'"},
      {"negative eos", {{"eos_token_id", -1}}, "'eos_token_id'"},
      {"eos as text", {{"eos_token_id", "</s>"}}, "'eos_token_id'"},
      {"negative eps", {{"rms_norm_eps", -1e-6}}, "'rms_norm_eps'"},
      {"rope theta as text", {{"rope_theta", "big"}}, "'rope_theta' must be a number"},
      {"yarn without its original length",
       {{"rope_scaling", {{"rope_type", "yarn"}, {"factor", 4.0}}}},
       "'rope_scaling.original_max_position_embeddings' is missing"},
      {"unsupported rope_scaling",
       {{"rope_scaling", {{"rope_type", "longrope"}, {"factor", 4.0}}}},
       "'rope_scaling.rope_type' is 'longrope'"},
      {"llama3 without factor",
       {{"rope_scaling", {{"rope_type", "llama3"}}}},
       "'rope_scaling.factor' is missing"},
      {"unsupported rope_parameters",
       {{"rope_parameters", {{"rope_type", "dynamic"}}}},
       "'rope_parameters.rope_type' is 'dynamic'"},
      {"attention bias", {{"attention_bias", true}}, "attention_bias"},
      {"gelu", {{"hidden_act", "gelu"}}, "hidden_act 'gelu'"},
      {"int8 dtype", {{"torch_dtype", "int8"}}, "'torch_dtype' is 'int8'"},
      {"tie as text", {{"tie_word_embeddings", "yes"}}, "'tie_word_embeddings' must be true"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    json config = shipped_json("qwen3-tiny");
    config.merge_patch(c.patch);
    std::string message = parse_error(config);
    EXPECT_NE(message.find("test/config.json"), std::string::npos) << message;
    EXPECT_NE(message.find(c.expected), std::string::npos) << message;
  }
}

TEST(ModelConfig, MalformedJsonIsAnErrorNamingTheFile) {
  try {
    model_config_from_json("{\"hidden_size\": ", "broken/config.json");
    FAIL() << "parsed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("broken/config.json: not valid JSON"), std::string::npos);
  }
  EXPECT_THROW(model_config_from_json("[1, 2]", "x.json"), Error);
}

TEST(ModelConfigLoad, TakesAFileAFolderOrAShippedName) {
  testing::TempDir dir;
  std::filesystem::create_directories(dir / "my-model");
  json config = shipped_json("qwen3-tiny");
  config["hidden_size"] = 256;
  testing::write_file(dir / "my-model" / "config.json", config.dump());
  testing::write_file(dir / "other.json", config.dump());

  ModelConfig from_folder = model_config_load((dir / "my-model").string());
  EXPECT_EQ(from_folder.name, "my-model");
  EXPECT_EQ(from_folder.hidden_size, 256);
  EXPECT_EQ(model_config_load((dir / "my-model" / "config.json").string()).name, "my-model");
  EXPECT_EQ(model_config_load((dir / "other.json").string()).name, "other");
  EXPECT_EQ(model_config_load(kModels + "qwen3-8b.json").hidden_size, 4096);
}

TEST(ModelConfigLoad, UnknownNamesListWhatIsShipped) {
  try {
    model_config_load("qwen9-huge");
    FAIL() << "loaded";
  } catch (const Error& e) {
    std::string message = e.what();
    EXPECT_NE(message.find("unknown model 'qwen9-huge'"), std::string::npos) << message;
    EXPECT_NE(message.find("qwen3-8b"), std::string::npos) << message;
  }
  EXPECT_THROW(model_config_load("no/such/config.json"), Error);
  testing::TempDir dir;
  EXPECT_THROW(model_config_load(dir.path().string()), Error);  // folder without config.json
}

TEST(ModelConfigLoad, HonoursPacelineHome) {
  testing::TempDir home;
  std::filesystem::create_directories(home / "configs" / "models");
  json config = shipped_json("qwen3-tiny");
  config["num_hidden_layers"] = 2;
  testing::write_file(home / "configs" / "models" / "home-only.json", config.dump());
  ::setenv("PACELINE_HOME", home.path().c_str(), 1);
  ModelConfig c = model_config_load("home-only");
  ::unsetenv("PACELINE_HOME");
  EXPECT_EQ(c.name, "home-only");
  EXPECT_EQ(c.num_hidden_layers, 2);
}

}  // namespace
}  // namespace paceline
