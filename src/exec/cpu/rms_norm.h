#pragma once
// RMSNorm as Llama and Qwen3 define it: x * rsqrt(mean(x^2) + eps) * weight, in float32.
#include <cstdint>

namespace paceline {

// One row of `width` floats; `out` may alias `x`.
void rms_norm(const float* x, const float* weight, int64_t width, float eps, float* out);

}  // namespace paceline
