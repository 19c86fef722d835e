#include "exec/cpu/linear.h"

#include <cblas.h>

namespace paceline {

void linear(const float* x, int64_t rows, int64_t in_features, const float* w, int64_t out_features,
            float* y, float beta) {
  if (rows <= 0) return;
  auto m = static_cast<blasint>(rows);
  auto n = static_cast<blasint>(out_features);
  auto k = static_cast<blasint>(in_features);
  if (rows == 1) {  // a decode of one sequence: a matrix-vector product
    cblas_sgemv(CblasRowMajor, CblasNoTrans, n, k, 1.0f, w, k, x, 1, beta, y, 1);
    return;
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0f, x, k, w, k, beta, y, n);
}

}  // namespace paceline
