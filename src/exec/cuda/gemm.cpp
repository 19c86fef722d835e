#include "exec/cuda/gemm.h"

#include "exec/cuda/cuda_check.h"

namespace paceline::cuda {

Gemm::Gemm(cudaStream_t stream) : workspace_(size_t{64} << 20) {
  PACELINE_CUBLAS_CHECK(cublasCreate(&handle_));
  PACELINE_CUBLAS_CHECK(cublasSetStream(handle_, stream));
  PACELINE_CUBLAS_CHECK(cublasSetWorkspace(handle_, workspace_.as<void>(), workspace_.bytes()));
  // No atomics: the same shapes give the same bits every time.
  PACELINE_CUBLAS_CHECK(cublasSetAtomicsMode(handle_, CUBLAS_ATOMICS_NOT_ALLOWED));
}

Gemm::~Gemm() {
  if (handle_ != nullptr) cublasDestroy(handle_);
}

void Gemm::run_f32(const bf16* x, int64_t rows, int64_t k, const bf16* w, int64_t n, float* y,
                   float beta) {
  run(x, rows, k, w, n, y, CUDA_R_32F, beta);
}

void Gemm::run_bf16(const bf16* x, int64_t rows, int64_t k, const bf16* w, int64_t n, bf16* y) {
  run(x, rows, k, w, n, y, CUDA_R_16BF, 0.0f);
}

void Gemm::run(const bf16* x, int64_t rows, int64_t k, const bf16* w, int64_t n, void* y,
               cudaDataType_t y_type, float beta) {
  const float alpha = 1.0f;
  const size_t y_size = y_type == CUDA_R_32F ? 4 : 2;
  for (int64_t first = 0; first < rows; first += kGemmRows) {
    // Column-major view: y^T [n, chunk] = w [k, n]^T . x^T [k, chunk].
    PACELINE_CUBLAS_CHECK(cublasGemmEx(
        handle_, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(kGemmRows),
        static_cast<int>(k), &alpha, w, CUDA_R_16BF, static_cast<int>(k), x + first * k,
        CUDA_R_16BF, static_cast<int>(k), &beta,
        static_cast<char*>(y) + static_cast<size_t>(first * n) * y_size, y_type,
        static_cast<int>(n), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  }
}

}  // namespace paceline::cuda
