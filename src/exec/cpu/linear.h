#pragma once
// A linear layer without bias over a batch of rows, in Hugging Face's weight layout
// ([out_features, in_features], row-major): y = x @ w^T + beta * y. OpenBLAS does the work.
#include <cstdint>

namespace paceline {

void linear(const float* x, int64_t rows, int64_t in_features, const float* w, int64_t out_features,
            float* y, float beta = 0.0f);

}  // namespace paceline
