#include "exec/cpu/rope.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "base/error.h"

namespace paceline {
namespace {

void apply_llama3(const RopeScaling& s, std::vector<float>& inv_freq) {
  if (s.high_freq_factor <= s.low_freq_factor) {
    fail("llama3 rope scaling needs high_freq_factor > low_freq_factor, got {} and {}",
         s.high_freq_factor, s.low_freq_factor);
  }
  double old_context = static_cast<double>(s.original_max_position_embeddings);
  double low_freq_wavelen = old_context / s.low_freq_factor;
  double high_freq_wavelen = old_context / s.high_freq_factor;
  for (float& f : inv_freq) {
    double wavelen = 2.0 * std::numbers::pi / f;
    if (wavelen < high_freq_wavelen) continue;  // high frequencies: untouched
    if (wavelen > low_freq_wavelen) {           // low frequencies: slowed by the full factor
      f = static_cast<float>(f / s.factor);
      continue;
    }
    double smooth =
        (old_context / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
    f = static_cast<float>((1.0 - smooth) * f / s.factor + smooth * f);
  }
}

// YaRN, step by step as transformers computes it: the dimension bounds in double, everything per
// frequency in float32 (one rounding per operation, as each torch op rounds).
void apply_yarn(const RopeScaling& s, int64_t head_dim, double theta, std::vector<float>& inv_freq) {
  if (s.factor < 1.0) fail("yarn rope scaling needs factor >= 1, got {}", s.factor);
  if (s.original_max_position_embeddings < 1) {
    fail("yarn rope scaling needs original_max_position_embeddings >= 1, got {}",
         s.original_max_position_embeddings);
  }
  const auto dim = static_cast<double>(head_dim);
  const auto context = static_cast<double>(s.original_max_position_embeddings);
  // The dimension whose frequency turns `rotations` times over the original context.
  auto correction_dim = [&](double rotations) {
    return dim * std::log(context / (rotations * 2.0 * std::numbers::pi)) / (2.0 * std::log(theta));
  };
  double low = correction_dim(s.beta_fast);
  double high = correction_dim(s.beta_slow);
  if (s.truncate) {
    low = std::floor(low);
    high = std::ceil(high);
  }
  low = std::max(low, 0.0);
  high = std::min(high, dim - 1.0);
  if (low == high) high += 0.001;  // HF's guard against a zero-width ramp
  const auto low_f = static_cast<float>(low);
  const auto width_f = static_cast<float>(high - low);
  const auto factor_f = static_cast<float>(s.factor);
  const float one = 1.0f;
  for (size_t i = 0; i < inv_freq.size(); ++i) {
    // HF's pos_freqs = theta^(2i/d) in float32, then both reciprocals from it.
    const float exponent = static_cast<float>(2 * static_cast<int64_t>(i)) /
                           static_cast<float>(head_dim);
    const float pos_freq = std::pow(static_cast<float>(theta), exponent);
    const float extrapolation = one / pos_freq;
    const float interpolation = one / (factor_f * pos_freq);
    const float ramp = std::clamp((static_cast<float>(i) - low_f) / width_f, 0.0f, 1.0f);
    const float keep = one - ramp;  // HF's inv_freq_extrapolation_factor
    const float a = interpolation * (one - keep);
    const float b = extrapolation * keep;
    inv_freq[i] = a + b;
  }
}

// 0.1 m ln(scale) + 1, or 1 for scale <= 1 (YaRN's "get_mscale").
double yarn_mscale(double scale, double m) {
  return scale <= 1.0 ? 1.0 : 0.1 * m * std::log(scale) + 1.0;
}

}  // namespace

std::vector<float> rope_inv_freq(int64_t head_dim, double theta,
                                 const std::optional<RopeScaling>& scaling) {
  if (head_dim <= 0 || head_dim % 2 != 0) fail("RoPE needs an even head_dim, got {}", head_dim);
  int64_t half = head_dim / 2;
  std::vector<float> inv_freq(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; ++i) {
    float exponent = static_cast<float>(2 * i) / static_cast<float>(head_dim);
    inv_freq[i] = 1.0f / std::pow(static_cast<float>(theta), exponent);
  }
  if (!scaling) return inv_freq;
  switch (scaling->type) {
    case RopeType::kLlama3:
      apply_llama3(*scaling, inv_freq);
      break;
    case RopeType::kYarn:
      apply_yarn(*scaling, head_dim, theta, inv_freq);
      break;
  }
  return inv_freq;
}

double rope_attention_factor(const std::optional<RopeScaling>& scaling) {
  if (!scaling || scaling->type != RopeType::kYarn) return 1.0;
  const RopeScaling& s = *scaling;
  if (s.attention_factor) return *s.attention_factor;
  // transformers tests `if mscale and mscale_all_dim`: unset and 0 both mean "not given".
  if (s.mscale.value_or(0.0) != 0.0 && s.mscale_all_dim.value_or(0.0) != 0.0) {
    return yarn_mscale(s.factor, *s.mscale) / yarn_mscale(s.factor, *s.mscale_all_dim);
  }
  return yarn_mscale(s.factor, 1.0);
}

RotaryEmbedding::RotaryEmbedding(int64_t head_dim, double theta,
                                 const std::optional<RopeScaling>& scaling)
    : head_dim_(head_dim),
      inv_freq_(rope_inv_freq(head_dim, theta, scaling)),
      attention_factor_(static_cast<float>(rope_attention_factor(scaling))) {}

void RotaryEmbedding::cos_sin(int64_t position, float* out) const {
  int64_t half = head_dim_ / 2;
  float pos = static_cast<float>(position);
  for (int64_t i = 0; i < half; ++i) {
    float angle = inv_freq_[i] * pos;  // float32 product, as HF's matmul of the two
    // HF: emb.cos() * attention_scaling, in float32 (exact for the factor 1 of other ropes).
    out[i] = std::cos(angle) * attention_factor_;
    out[half + i] = std::sin(angle) * attention_factor_;
  }
}

void RotaryEmbedding::rotate(float* heads, int64_t num_heads, const float* cos_sin) const {
  int64_t half = head_dim_ / 2;
  const float* cos = cos_sin;
  const float* sin = cos_sin + half;
  for (int64_t h = 0; h < num_heads; ++h) {
    float* x = heads + h * head_dim_;
    for (int64_t i = 0; i < half; ++i) {
      float x1 = x[i];
      float x2 = x[half + i];
      x[i] = x1 * cos[i] - x2 * sin[i];
      x[half + i] = x2 * cos[i] + x1 * sin[i];
    }
  }
}

}  // namespace paceline
