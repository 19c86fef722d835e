#pragma once
// Model shape and hyper-parameters, read from a Hugging Face config.json (Qwen3 dense, Llama-3.x).
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace paceline {

enum class ModelArch { kQwen3, kLlama };
const char* model_arch_name(ModelArch arch);  // "qwen3", "llama": config.json's model_type

// Llama-3.x "llama3" RoPE scaling (rope_type / type == "llama3").
struct RopeScaling {
  double factor = 1.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  int64_t original_max_position_embeddings = 8192;
};

struct ModelConfig {
  std::string name;  // e.g. "qwen3-8b"; from the file name when config.json has none
  ModelArch arch = ModelArch::kQwen3;
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0;
  int64_t head_dim = 0;  // hidden_size / num_attention_heads when config.json has none
  int64_t max_position_embeddings = 0;
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  std::optional<RopeScaling> rope_scaling;
  bool tie_word_embeddings = false;
  bool qk_norm = false;  // Qwen3: RMSNorm over each head of q and k before RoPE
  std::vector<int64_t> eos_token_ids;
  std::optional<int64_t> bos_token_id;
  std::string torch_dtype = "bfloat16";

  int64_t q_size() const { return num_attention_heads * head_dim; }
  int64_t kv_size() const { return num_key_value_heads * head_dim; }
  // Every weight, counting tied embeddings once (the sum over expected_tensors()).
  int64_t num_parameters() const;
  // KV cache bytes per token for all layers at the given element size.
  int64_t kv_bytes_per_token(int64_t element_bytes) const {
    return 2 * num_hidden_layers * kv_size() * element_bytes;
  }
};

// Parses config.json text; `where` names the source in error messages. Throws paceline::Error.
ModelConfig model_config_from_json(const std::string& json_text, const std::string& where);
// Accepts a config.json file, a folder holding one, or a shipped name ("tiny", "qwen3-8b"):
// names resolve to configs/models/<name>.json.
ModelConfig model_config_load(const std::string& path_or_name);
// The config file a path or shipped name resolves to, as model_config_load finds it. Shipped
// names are searched in $PACELINE_HOME/configs/models, ./configs/models, then configs/models in
// the executable's folder and each folder above it.
std::filesystem::path model_config_resolve(const std::string& path_or_name);
// Names of the shipped configs ("llama-3.1-8b", ..., "qwen3-tiny"), sorted; empty when no
// configs/models folder is found.
std::vector<std::string> model_config_shipped_names();

}  // namespace paceline
