#include "exec/cpu/swiglu.h"

#include <cmath>

namespace paceline {

void swiglu(const float* gate_up, int64_t rows, int64_t width, float* out) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* gate = gate_up + r * 2 * width;
    const float* up = gate + width;
    float* o = out + r * width;
    for (int64_t i = 0; i < width; ++i) {
      float g = gate[i];
      o[i] = g / (1.0f + std::exp(-g)) * up[i];
    }
  }
}

}  // namespace paceline
