#include "exec/cpu/rms_norm.h"

#include <cmath>

namespace paceline {

void rms_norm(const float* x, const float* weight, int64_t width, float eps, float* out) {
  // The sum of squares in double keeps the mean exact enough at any width; the scaling is f32.
  double sum_squares = 0.0;
  for (int64_t i = 0; i < width; ++i) sum_squares += static_cast<double>(x[i]) * x[i];
  float mean = static_cast<float>(sum_squares / static_cast<double>(width));
  float inv_rms = 1.0f / std::sqrt(mean + eps);
  for (int64_t i = 0; i < width; ++i) out[i] = weight[i] * (x[i] * inv_rms);
}

}  // namespace paceline
