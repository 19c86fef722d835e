#include "exec/cuda/gemm.h"

#include "base/error.h"
#include "exec/cuda/cuda_check.h"

namespace paceline::cuda {

Gemm::Gemm(cudaStream_t stream) : stream_(stream), workspace_(size_t{64} << 20) {
  PACELINE_CUBLAS_CHECK(cublasLtCreate(&handle_));
}

Gemm::~Gemm() {
  for (auto& [key, p] : plans_) {
    if (p.w != nullptr) cublasLtMatrixLayoutDestroy(p.w);
    if (p.x != nullptr) cublasLtMatrixLayoutDestroy(p.x);
    if (p.y != nullptr) cublasLtMatrixLayoutDestroy(p.y);
    if (p.desc != nullptr) cublasLtMatmulDescDestroy(p.desc);
  }
  if (handle_ != nullptr) cublasLtDestroy(handle_);
}

void Gemm::run_f32(const bf16* x, int64_t rows, int64_t k, const bf16* w, int64_t n, float* y,
                   float beta) {
  run(x, rows, k, w, n, y, CUDA_R_32F, beta);
}

void Gemm::run_bf16(const bf16* x, int64_t rows, int64_t k, const bf16* w, int64_t n, bf16* y) {
  run(x, rows, k, w, n, y, CUDA_R_16BF, 0.0f);
}

const Gemm::Plan& Gemm::plan(int64_t k, int64_t n, cudaDataType_t y_type, bool accumulate) {
  const Key key{k, n, static_cast<int>(y_type), accumulate};
  auto it = plans_.find(key);
  if (it != plans_.end()) return it->second;
  Plan p;
  // Column-major view: y^T [n, chunk] = w^T . x^T, w stored as [k, n] (ld k), x^T as [k, chunk].
  PACELINE_CUBLAS_CHECK(cublasLtMatmulDescCreate(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t transpose = CUBLAS_OP_T, none = CUBLAS_OP_N;
  PACELINE_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA,
                                                       &transpose, sizeof transpose));
  PACELINE_CUBLAS_CHECK(
      cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &none, sizeof none));
  PACELINE_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p.w, CUDA_R_16BF, static_cast<uint64_t>(k),
                                                   static_cast<uint64_t>(n), k));
  PACELINE_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p.x, CUDA_R_16BF, static_cast<uint64_t>(k),
                                                   static_cast<uint64_t>(kGemmRows), k));
  PACELINE_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p.y, y_type, static_cast<uint64_t>(n),
                                                   static_cast<uint64_t>(kGemmRows), n));
  cublasLtMatmulPreference_t pref = nullptr;
  PACELINE_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  const uint64_t workspace_bytes = workspace_.bytes();
  cublasStatus_t status = cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes, sizeof workspace_bytes);
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  if (status == CUBLAS_STATUS_SUCCESS) {
    status = cublasLtMatmulAlgoGetHeuristic(handle_, p.desc, p.w, p.x, p.y, p.y, pref, 1, &result,
                                            &found);
  }
  cublasLtMatmulPreferenceDestroy(pref);
  PACELINE_CUBLAS_CHECK(status);
  if (found < 1) fail("cuBLASLt has no algorithm for a bf16 GEMM of k {} n {}", k, n);
  p.algo = result.algo;
  return plans_.emplace(key, p).first->second;
}

void Gemm::run(const bf16* x, int64_t rows, int64_t k, const bf16* w, int64_t n, void* y,
               cudaDataType_t y_type, float beta) {
  const float alpha = 1.0f;
  const size_t y_size = y_type == CUDA_R_32F ? 4 : 2;
  const Plan& p = plan(k, n, y_type, beta != 0.0f);
  for (int64_t first = 0; first < rows; first += kGemmRows) {
    void* out = static_cast<char*>(y) + static_cast<size_t>(first * n) * y_size;
    PACELINE_CUBLAS_CHECK(cublasLtMatmul(handle_, p.desc, &alpha, w, p.w, x + first * k, p.x,
                                         &beta, out, p.y, out, p.y, &p.algo,
                                         workspace_.as<void>(), workspace_.bytes(), stream_));
  }
}

}  // namespace paceline::cuda
