// Reading a Hugging Face config.json into ModelConfig. Every field is checked for type and
// range, and an error names the file and the field, so a bad config never reaches a kernel.
#include "model/config.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/log.h"
#include "model/json_brief.h"

namespace paceline {
namespace {

using nlohmann::json;

// Caps far above any real model that keep every product in num_parameters() within int64.
constexpr int64_t kMaxVocab = int64_t{1} << 24;
constexpr int64_t kMaxWidth = int64_t{1} << 20;  // hidden_size, intermediate_size
constexpr int64_t kMaxCount = int64_t{1} << 12;  // layers, heads, head_dim
constexpr int64_t kMaxPositions = int64_t{1} << 30;

// Looks fields up in one JSON object; `prefix` is how error messages name the object
// ("" for the top level, "rope_scaling." inside it).
class Fields {
 public:
  Fields(const json& object, const std::string& where, std::string prefix = "")
      : object_(object), where_(where), prefix_(std::move(prefix)) {}

  // The field, or nullptr when absent or null (Hugging Face writes null for "not set").
  const json* find(const char* field) const {
    auto it = object_.find(field);
    return it == object_.end() || it->is_null() ? nullptr : &*it;
  }

  [[noreturn]] void bad(const char* field, const char* expected, const json& value) const {
    fail("{}: field '{}{}' must be {}, got {}", where_, prefix_, field, expected,
         json_brief(value, 40));
  }

  std::optional<int64_t> integer(const char* field) const {
    const json* value = find(field);
    if (!value) return std::nullopt;
    if (value->is_number_unsigned()) {
      if (value->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        bad(field, "an integer that fits in 64 bits", *value);
      }
      return static_cast<int64_t>(value->get<uint64_t>());
    }
    if (value->is_number_integer()) return value->get<int64_t>();
    if (value->is_number_float()) {  // some exporters write 4096.0
      double d = value->get<double>();
      if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 0x1p62) {
        return static_cast<int64_t>(d);
      }
    }
    bad(field, "an integer", *value);
  }

  // A size in [1, max]; `fallback` when absent, or an error naming the field when required.
  int64_t size(const char* field, int64_t max, std::optional<int64_t> fallback) const {
    std::optional<int64_t> value = integer(field);
    if (!value) {
      if (!fallback) fail("{}: field '{}{}' is missing", where_, prefix_, field);
      return *fallback;
    }
    if (*value < 1 || *value > max) {
      fail("{}: field '{}{}' must be between 1 and {}, got {}", where_, prefix_, field, max,
           *value);
    }
    return *value;
  }

  // A finite number > 0, or `fallback` when absent.
  double positive(const char* field, double fallback) const {
    const json* value = find(field);
    if (!value) return fallback;
    if (!value->is_number()) bad(field, "a number", *value);
    double d = value->get<double>();
    if (!std::isfinite(d) || d <= 0) bad(field, "a positive number", *value);
    return d;
  }

  // A finite number >= 0, or nullopt when absent.
  std::optional<double> non_negative(const char* field) const {
    const json* value = find(field);
    if (!value) return std::nullopt;
    if (!value->is_number()) bad(field, "a number", *value);
    double d = value->get<double>();
    if (!std::isfinite(d) || d < 0) bad(field, "a number >= 0", *value);
    return d;
  }

  bool boolean(const char* field, bool fallback) const {
    const json* value = find(field);
    if (!value) return fallback;
    if (!value->is_boolean()) bad(field, "true or false", *value);
    return value->get<bool>();
  }

  std::optional<std::string> string(const char* field) const {
    const json* value = find(field);
    if (!value) return std::nullopt;
    if (!value->is_string()) bad(field, "a string", *value);
    return value->get<std::string>();
  }

  const std::string& where() const { return where_; }
  const std::string& prefix() const { return prefix_; }

 private:
  const json& object_;
  const std::string& where_;
  std::string prefix_;
};

ModelArch parse_arch(const Fields& f) {
  if (std::optional<std::string> type = f.string("model_type")) {
    if (*type == "qwen3") return ModelArch::kQwen3;
    if (*type == "llama") return ModelArch::kLlama;
    fail("{}: model_type '{}' is not supported (supported: qwen3, llama)", f.where(), *type);
  }
  if (const json* archs = f.find("architectures")) {
    if (!archs->is_array() || archs->empty() || !(*archs)[0].is_string()) {
      f.bad("architectures", "a list of class names", *archs);
    }
    std::string arch = (*archs)[0].get<std::string>();
    if (arch == "Qwen3ForCausalLM") return ModelArch::kQwen3;
    if (arch == "LlamaForCausalLM") return ModelArch::kLlama;
    fail("{}: architecture '{}' is not supported (supported: Qwen3ForCausalLM, LlamaForCausalLM)",
         f.where(), arch);
  }
  fail("{}: neither model_type nor architectures says which model this is", f.where());
}

// The llama3 fields of a rope object.
RopeScaling parse_llama3(const Fields& f) {
  if (!f.find("factor")) fail("{}: field '{}factor' is missing", f.where(), f.prefix());
  RopeScaling s;
  s.factor = f.positive("factor", s.factor);
  s.low_freq_factor = f.positive("low_freq_factor", s.low_freq_factor);
  s.high_freq_factor = f.positive("high_freq_factor", s.high_freq_factor);
  s.original_max_position_embeddings =
      f.size("original_max_position_embeddings", kMaxPositions, s.original_max_position_embeddings);
  if (s.high_freq_factor <= s.low_freq_factor) {
    fail("{}: field '{}high_freq_factor' ({}) must be greater than low_freq_factor ({})", f.where(),
         f.prefix(), s.high_freq_factor, s.low_freq_factor);
  }
  return s;
}

// The YaRN fields of a rope object, as transformers' _compute_yarn_parameters reads them.
// `top` is the whole config (for max_position_embeddings and a top-level
// original_max_position_embeddings, which transformers also accepts).
RopeScaling parse_yarn(const Fields& f, const Fields& top, int64_t max_positions) {
  RopeScaling s;
  s.type = RopeType::kYarn;
  // transformers falls back to max_position_embeddings / original when factor is null; a config
  // that leaves it out is more likely a mistake, so it must be written.
  if (!f.find("factor")) fail("{}: field '{}factor' is missing", f.where(), f.prefix());
  s.factor = f.positive("factor", s.factor);
  if (s.factor < 1.0) {
    fail("{}: field '{}factor' must be at least 1 (YaRN stretches the context), got {}", f.where(),
         f.prefix(), s.factor);
  }
  std::optional<int64_t> inner;
  if (f.find("original_max_position_embeddings")) {
    inner = f.size("original_max_position_embeddings", kMaxPositions, std::nullopt);
  }
  std::optional<int64_t> outer;
  if (top.find("original_max_position_embeddings")) {
    outer = top.size("original_max_position_embeddings", kMaxPositions, std::nullopt);
  }
  if (!inner && !outer) {
    fail(
        "{}: field '{}original_max_position_embeddings' is missing (YaRN needs the context length "
        "the model was trained with, e.g. 32768 for Qwen3)",
        f.where(), f.prefix());
  }
  if (inner && outer && *inner != *outer) {
    fail(
        "{}: field '{}original_max_position_embeddings' ({}) contradicts the top-level "
        "original_max_position_embeddings ({})",
        f.where(), f.prefix(), *inner, *outer);
  }
  s.original_max_position_embeddings = inner ? *inner : *outer;
  if (s.original_max_position_embeddings > max_positions) {
    fail(
        "{}: field '{}original_max_position_embeddings' ({}) must not exceed "
        "max_position_embeddings ({}): the trained context cannot be longer than the model's",
        f.where(), f.prefix(), s.original_max_position_embeddings, max_positions);
  }
  if (static_cast<double>(s.original_max_position_embeddings) * s.factor >
      static_cast<double>(kMaxPositions)) {
    fail("{}: field '{}factor' ({}) times original_max_position_embeddings ({}) exceeds {} positions",
         f.where(), f.prefix(), s.factor, s.original_max_position_embeddings, kMaxPositions);
  }
  s.beta_fast = f.positive("beta_fast", s.beta_fast);
  s.beta_slow = f.positive("beta_slow", s.beta_slow);
  if (s.beta_fast < s.beta_slow) {
    fail("{}: field '{}beta_fast' ({}) must not be less than beta_slow ({})", f.where(), f.prefix(),
         s.beta_fast, s.beta_slow);
  }
  s.truncate = f.boolean("truncate", s.truncate);
  if (f.find("attention_factor")) s.attention_factor = f.positive("attention_factor", 1.0);
  s.mscale = f.non_negative("mscale");
  s.mscale_all_dim = f.non_negative("mscale_all_dim");
  return s;
}

// One RoPE description, in either the legacy rope_scaling object or transformers 5.x's
// rope_parameters. Returns the scaling (none for "default") and, in `theta`, the object's
// rope_theta when it has one.
std::optional<RopeScaling> parse_rope(const Fields& f, const Fields& top, int64_t max_positions,
                                      double* theta) {
  if (f.find("rope_theta")) *theta = f.positive("rope_theta", *theta);
  std::optional<std::string> rope_type = f.string("rope_type");
  std::optional<std::string> legacy_type = f.string("type");
  if (rope_type && legacy_type && *rope_type != *legacy_type) {
    fail("{}: field '{}rope_type' ('{}') contradicts field '{}type' ('{}')", f.where(), f.prefix(),
         *rope_type, f.prefix(), *legacy_type);
  }
  std::string type = rope_type.value_or(legacy_type.value_or("default"));
  if (type == "default") return std::nullopt;
  if (type == "llama3") return parse_llama3(f);
  if (type == "yarn") return parse_yarn(f, top, max_positions);
  fail(
      "{}: field '{}rope_type' is '{}', which paceline does not support (supported: default, "
      "llama3, yarn)",
      f.where(), f.prefix(), type);
}

void parse_rope_fields(const Fields& f, ModelConfig& c) {
  c.rope_theta = f.positive("rope_theta", c.rope_theta);
  if (const json* params = f.find("rope_parameters")) {  // transformers >= 5 replaces the others
    if (!params->is_object()) f.bad("rope_parameters", "an object", *params);
    c.rope_scaling = parse_rope(Fields(*params, f.where(), "rope_parameters."), f,
                                c.max_position_embeddings, &c.rope_theta);
    return;
  }
  if (const json* scaling = f.find("rope_scaling")) {
    if (!scaling->is_object()) f.bad("rope_scaling", "an object or null", *scaling);
    double ignored_theta = c.rope_theta;
    c.rope_scaling = parse_rope(Fields(*scaling, f.where(), "rope_scaling."), f,
                                c.max_position_embeddings, &ignored_theta);
  }
}

// Token ids in [0, vocab_size). With `warn_outside`, an id at or past vocab_size is dropped with a
// warning instead (Transformers loads such an eos_token_id; the model can never produce it).
std::vector<int64_t> parse_token_ids(const Fields& f, const char* field, int64_t vocab,
                                     bool warn_outside = false) {
  std::vector<int64_t> ids;
  const json* value = f.find(field);
  if (!value) return ids;
  auto check = [&](const json& id) {
    if (warn_outside && id.is_number_integer() && id.get<int64_t>() >= vocab) {
      spdlog::warn("{}: field '{}' holds {}, outside the vocabulary (vocab_size={}): the model "
                   "can never produce it, so it ends no sequence",
                   f.where(), field, id.get<int64_t>(), vocab);
      return;
    }
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= vocab) {
      fail("{}: field '{}' must hold token ids in [0, vocab_size={}), got {}", f.where(), field,
           vocab, json_brief(*value, 40));
    }
    ids.push_back(id.get<int64_t>());
  };
  if (value->is_array()) {
    for (const json& id : *value) check(id);
  } else {
    check(*value);
  }
  return ids;
}

// Features of these model families that paceline's layers do not implement: refuse them here
// rather than compute something else.
void reject_unsupported(const Fields& f) {
  if (f.boolean("attention_bias", false)) {
    fail("{}: attention_bias true is not supported (q/k/v/o projections have no bias)", f.where());
  }
  if (f.boolean("mlp_bias", false)) {
    fail("{}: mlp_bias true is not supported (MLP projections have no bias)", f.where());
  }
  if (f.boolean("use_sliding_window", false)) {
    fail("{}: use_sliding_window true is not supported (full attention only)", f.where());
  }
  std::string act = f.string("hidden_act").value_or("silu");
  if (act != "silu") fail("{}: hidden_act '{}' is not supported (silu only)", f.where(), act);
  if (f.find("quantization_config")) {
    fail("{}: quantization_config is set; quantized checkpoints are not supported", f.where());
  }
}

void validate(const ModelConfig& c, const std::string& where) {
  if (c.num_attention_heads % c.num_key_value_heads != 0) {
    fail("{}: num_attention_heads ({}) must be a multiple of num_key_value_heads ({})", where,
         c.num_attention_heads, c.num_key_value_heads);
  }
  if (c.head_dim % 2 != 0) fail("{}: head_dim ({}) must be even for RoPE", where, c.head_dim);
}

}  // namespace

const char* model_arch_name(ModelArch arch) {
  return arch == ModelArch::kQwen3 ? "qwen3" : "llama";
}

ModelConfig model_config_from_json(const std::string& json_text, const std::string& where) {
  json root;
  try {
    root = json::parse(json_text);
  } catch (const json::exception& e) {
    fail("{}: not valid JSON: {}", where, e.what());
  }
  if (!root.is_object()) fail("{}: expected a JSON object, got {}", where, json_brief(root, 40));
  Fields f(root, where);

  ModelConfig c;
  c.arch = parse_arch(f);
  c.qk_norm = c.arch == ModelArch::kQwen3;
  reject_unsupported(f);
  c.vocab_size = f.size("vocab_size", kMaxVocab, std::nullopt);
  c.hidden_size = f.size("hidden_size", kMaxWidth, std::nullopt);
  c.intermediate_size = f.size("intermediate_size", kMaxWidth, std::nullopt);
  c.num_hidden_layers = f.size("num_hidden_layers", kMaxCount, std::nullopt);
  c.num_attention_heads = f.size("num_attention_heads", kMaxCount, std::nullopt);
  c.num_key_value_heads =
      f.size("num_key_value_heads", c.num_attention_heads, c.num_attention_heads);
  if (!f.find("head_dim") && c.hidden_size % c.num_attention_heads != 0) {
    fail(
        "{}: head_dim is missing and hidden_size ({}) is not a multiple of num_attention_heads "
        "({})",
        where, c.hidden_size, c.num_attention_heads);
  }
  c.head_dim = f.size("head_dim", kMaxCount, c.hidden_size / c.num_attention_heads);
  // Absent max_position_embeddings: the transformers defaults of each config class.
  c.max_position_embeddings =
      f.size("max_position_embeddings", kMaxPositions, c.arch == ModelArch::kQwen3 ? 32768 : 2048);
  c.rms_norm_eps = f.positive("rms_norm_eps", c.rms_norm_eps);
  parse_rope_fields(f, c);
  if (c.rope_scaling && c.rope_scaling->type == RopeType::kYarn) {
    // The engine's context: YaRN's stretched length when it is longer than the file's
    // max_position_embeddings (Qwen3: 40960 in the file, 32768 x 4 = 131072 with YaRN), as vLLM
    // derives max_model_len. The rope itself never reads max_position_embeddings.
    auto stretched = static_cast<int64_t>(
        static_cast<double>(c.rope_scaling->original_max_position_embeddings) *
        c.rope_scaling->factor);
    c.max_position_embeddings = std::max(c.max_position_embeddings, stretched);
  }
  c.tie_word_embeddings = f.boolean("tie_word_embeddings", false);
  c.eos_token_ids = parse_token_ids(f, "eos_token_id", c.vocab_size, /*warn_outside=*/true);
  std::vector<int64_t> bos = parse_token_ids(f, "bos_token_id", c.vocab_size);
  if (bos.size() > 1) f.bad("bos_token_id", "a single token id", *f.find("bos_token_id"));
  if (!bos.empty()) c.bos_token_id = bos[0];
  // transformers 5.x writes "dtype"; older versions "torch_dtype".
  const char* dtype_field = f.find("dtype") ? "dtype" : "torch_dtype";
  c.torch_dtype = f.string(dtype_field).value_or(c.torch_dtype);
  if (c.torch_dtype != "bfloat16" && c.torch_dtype != "float16" && c.torch_dtype != "float32") {
    fail("{}: field '{}' is '{}'; supported: bfloat16, float16, float32", where, dtype_field,
         c.torch_dtype);
  }
  validate(c, where);
  return c;
}

int64_t ModelConfig::num_parameters() const {
  const int64_t embedding = vocab_size * hidden_size;
  const int64_t attention = hidden_size * q_size() + 2 * hidden_size * kv_size() +
                            q_size() * hidden_size + (qk_norm ? 2 * head_dim : 0);
  const int64_t mlp = 3 * hidden_size * intermediate_size;
  const int64_t norms = 2 * hidden_size;
  return embedding * (tie_word_embeddings ? 1 : 2) + num_hidden_layers * (attention + mlp + norms) +
         hidden_size;
}

}  // namespace paceline
