#pragma once
// Model weights as named tensors, in Hugging Face's names and shapes
// (model.layers.0.self_attn.q_proj.weight: [q_size, hidden]). Storage is either an mmapped
// safetensors file or memory owned here (dummy weights). Executors convert to what they compute in.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "model/config.h"

namespace paceline {

enum class DType { kF32, kF16, kBF16 };
int64_t dtype_size(DType dtype);
const char* dtype_name(DType dtype);

struct TensorView {
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  const void* data = nullptr;
  int64_t numel() const;
  int64_t nbytes() const { return numel() * dtype_size(dtype); }
  // Element i converted to float32.
  float at(int64_t i) const;
  // All elements converted to float32 into out (size numel()).
  void to_f32(float* out) const;
};

struct ExpectedTensor {
  std::string name;
  std::vector<int64_t> shape;
};
// Every tensor a config needs, in Hugging Face naming (lm_head.weight only when untied).
std::vector<ExpectedTensor> expected_tensors(const ModelConfig& config);

class Weights {
 public:
  virtual ~Weights() = default;
  // Throws paceline::Error naming the tensor when it is absent.
  virtual const TensorView& get(const std::string& name) const = 0;
  virtual bool has(const std::string& name) const = 0;
};

// Tensor `name` of `weights`, which must have shape `shape`: otherwise an error naming it with
// both shapes (`tensor NAME: shape [a, b], the config needs [c, d]`). The executors' uploads
// check every tensor through it.
const TensorView& checked_tensor(const Weights& weights, const std::string& name,
                                 const std::vector<int64_t>& shape);

// A Hugging Face checkpoint folder (model.safetensors, or shards listed in
// model.safetensors.index.json) or a single .safetensors file. Validates every expected tensor's
// presence, dtype and shape against the config; errors name the file and the tensor.
std::unique_ptr<Weights> load_safetensors_weights(const std::string& path,
                                                  const ModelConfig& config);
// Deterministic random weights for any config (vLLM's --load-format dummy): the same config and
// seed give the same bits on every machine.
std::unique_ptr<Weights> make_dummy_weights(const ModelConfig& config, uint64_t seed,
                                            DType dtype = DType::kBF16);

}  // namespace paceline
