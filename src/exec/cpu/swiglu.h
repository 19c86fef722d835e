#pragma once
// The activation of the gated MLP (Llama, Qwen3): silu(gate) * up.
#include <cstdint>

namespace paceline {

// gate_up holds `rows` rows of [gate (width) | up (width)], as one GEMM over the stacked
// gate_proj and up_proj weights writes them; out gets rows x width.
void swiglu(const float* gate_up, int64_t rows, int64_t width, float* out);

}  // namespace paceline
