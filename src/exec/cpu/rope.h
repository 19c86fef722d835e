#pragma once
// Rotary position embedding as Hugging Face Llama and Qwen3 apply it: "rotate half" (GPT-NeoX
// style), where element i of a head pairs with element i + head_dim / 2, and the optional
// Llama-3.x "llama3" rescaling of the inverse frequencies.
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "model/config.h"

namespace paceline {

// theta^(-2i / head_dim) for i in [0, head_dim / 2), in float32 as HF computes it, then rescaled
// by `scaling` when set: wavelengths shorter than original_max / high_freq_factor are kept,
// longer than original_max / low_freq_factor divided by factor, and the band in between
// interpolated smoothly.
std::vector<float> rope_inv_freq(int64_t head_dim, double theta,
                                 const std::optional<RopeScaling>& scaling);

class RotaryEmbedding {
 public:
  RotaryEmbedding(int64_t head_dim, double theta, const std::optional<RopeScaling>& scaling);

  int64_t head_dim() const { return head_dim_; }
  std::span<const float> inv_freq() const { return inv_freq_; }

  // Writes head_dim floats to out: cos of the head_dim / 2 angles of `position`, then their sin.
  void cos_sin(int64_t position, float* out) const;
  // Rotates num_heads contiguous heads in place with a row from cos_sin().
  void rotate(float* heads, int64_t num_heads, const float* cos_sin) const;

 private:
  int64_t head_dim_;
  std::vector<float> inv_freq_;
};

}  // namespace paceline
