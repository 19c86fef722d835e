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

enum class RopeType { kLlama3, kYarn };

// RoPE scaling, as config.json's rope_scaling (or transformers 5.x's rope_parameters) gives it:
// Llama-3.x "llama3" or YaRN ("yarn", Qwen3's long-context setting). The fields each type does
// not read keep their defaults.
struct RopeScaling {
  RopeScaling() = default;
  // llama3 scaling.
  RopeScaling(double factor_, double low_freq_factor_, double high_freq_factor_,
              int64_t original_max_position_embeddings_)
      : factor(factor_),
        low_freq_factor(low_freq_factor_),
        high_freq_factor(high_freq_factor_),
        original_max_position_embeddings(original_max_position_embeddings_) {}

  double factor = 1.0;
  double low_freq_factor = 1.0;   // llama3
  double high_freq_factor = 4.0;  // llama3
  int64_t original_max_position_embeddings = 8192;
  RopeType type = RopeType::kLlama3;
  // YaRN. Frequencies whose wavelength fits beta_fast times in the original context are kept,
  // those fitting fewer than beta_slow times are divided by factor, a linear ramp in between.
  double beta_fast = 32.0;
  double beta_slow = 1.0;
  bool truncate = true;  // round the ramp's ends to whole dimensions (floor / ceil)
  // cos and sin are multiplied by the attention factor: attention_factor when set, else
  // mscale(factor, mscale) / mscale(factor, mscale_all_dim) when both are set and non-zero,
  // else 0.1 ln(factor) + 1 (rope_attention_factor in exec/cpu/rope.h).
  std::optional<double> attention_factor;
  std::optional<double> mscale;
  std::optional<double> mscale_all_dim;
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
  // The longest context the model serves, and the engine's default max_model_len: config.json's
  // max_position_embeddings, or with YaRN original_max_position_embeddings x factor when that
  // is longer (as vLLM derives it): 131,072 for Qwen3 with factor 4 over 32,768.
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
