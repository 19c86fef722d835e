#pragma once
// Rotary position embedding as Hugging Face Llama and Qwen3 apply it: "rotate half" (GPT-NeoX
// style), where element i of a head pairs with element i + head_dim / 2, with the optional
// Llama-3.x "llama3" or YaRN rescaling of the inverse frequencies (and YaRN's attention factor
// on cos and sin).
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "model/config.h"

namespace paceline {

// theta^(-2i / head_dim) for i in [0, head_dim / 2), in float32 as HF computes it, then rescaled
// by `scaling` when set.
// llama3: wavelengths shorter than original_max / high_freq_factor are kept, longer than
// original_max / low_freq_factor divided by factor, and the band in between interpolated
// smoothly.
// yarn (transformers' _compute_yarn_parameters): dimension d's number of turns over the original
// context decides; d below the one that turns beta_fast times keeps its frequency, d above the one
// that turns beta_slow times is divided by factor, and a linear ramp over d blends the two.
std::vector<float> rope_inv_freq(int64_t head_dim, double theta,
                                 const std::optional<RopeScaling>& scaling);

// The factor HF multiplies cos and sin by: 1 except for YaRN, where it is attention_factor when
// set, else mscale(factor, mscale) / mscale(factor, mscale_all_dim) when both are non-zero,
// else mscale(factor, 1), with mscale(s, m) = 0.1 m ln(s) + 1 (1 when s <= 1). Both q and k carry
// it, so attention logits grow by its square: 1.1386^2 = 1.296 for Qwen3's factor 4.
double rope_attention_factor(const std::optional<RopeScaling>& scaling);

class RotaryEmbedding {
 public:
  RotaryEmbedding(int64_t head_dim, double theta, const std::optional<RopeScaling>& scaling);

  int64_t head_dim() const { return head_dim_; }
  std::span<const float> inv_freq() const { return inv_freq_; }
  float attention_factor() const { return attention_factor_; }

  // Writes head_dim floats to out: cos of the head_dim / 2 angles of `position`, then their sin,
  // each times the attention factor.
  void cos_sin(int64_t position, float* out) const;
  // Rotates num_heads contiguous heads in place with a row from cos_sin().
  void rotate(float* heads, int64_t num_heads, const float* cos_sin) const;

 private:
  int64_t head_dim_;
  std::vector<float> inv_freq_;
  float attention_factor_;
};

}  // namespace paceline
