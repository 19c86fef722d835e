#include "exec/cuda/gemm.h"

#include <algorithm>
#include <cstdlib>
#include <fmt/format.h>
#include <string>

#include "base/error.h"
#include "exec/cuda/cuda_check.h"
#include "exec/cuda/gemm_small_m.h"

namespace paceline::cuda {

bool gemm_small_m_for(int64_t max_decode_rows) {
  const char* v = std::getenv("PACELINE_GEMM_SMALL_M");
  if (v != nullptr && std::string(v) == "1") return true;
  if (v != nullptr && std::string(v) == "0") return false;
  return max_decode_rows <= kSmallMAutoRows;
}

Gemm::Gemm(cudaStream_t stream) : stream_(stream), workspace_(size_t{64} << 20) {
  PACELINE_CUBLAS_CHECK(cublasLtCreate(&handle_));
  const char* chunked = std::getenv("PACELINE_GEMM_CHUNKED");
  single_call_ = chunked == nullptr || std::string(chunked) != "1";
  const char* prefill = std::getenv("PACELINE_GEMM_PREFILL_PLAN");
  prefill_plan_ = prefill == nullptr || std::string(prefill) != "0";
  PACELINE_CUDA_CHECK(prepare_gemm_small_m());  // before any graph capture
}

Gemm::~Gemm() {
  for (auto& [key, p] : plans_) {
    if (p.w != nullptr) cublasLtMatrixLayoutDestroy(p.w);
    if (p.x != nullptr) cublasLtMatrixLayoutDestroy(p.x);
    if (p.y != nullptr) cublasLtMatrixLayoutDestroy(p.y);
    if (p.desc != nullptr) cublasLtMatmulDescDestroy(p.desc);
    for (auto& [rows, xy] : p.whole) {
      if (xy.first != nullptr) cublasLtMatrixLayoutDestroy(xy.first);
      if (xy.second != nullptr) cublasLtMatrixLayoutDestroy(xy.second);
    }
  }
  if (handle_ != nullptr) cublasLtDestroy(handle_);
}

void Gemm::run_f32(const bf16* x, int64_t rows, int64_t k, const bf16* w, int64_t n, float* y,
                   float beta, int64_t small_rows) {
  run(x, rows, k, w, n, y, CUDA_R_32F, beta, small_rows);
}

void Gemm::run_bf16(const bf16* x, int64_t rows, int64_t k, const bf16* w, int64_t n, bf16* y,
                    int64_t small_rows) {
  run(x, rows, k, w, n, y, CUDA_R_16BF, 0.0f, small_rows);
}

const Gemm::Plan& Gemm::plan(int64_t k, int64_t n, cudaDataType_t y_type, bool accumulate,
                             bool prefill) {
  const Key key{k, n, static_cast<int>(y_type), accumulate, prefill};
  auto it = plans_.find(key);
  if (it != plans_.end()) return it->second;
  Plan p;
  p.k = k;
  p.n = n;
  p.y_type = y_type;
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
  constexpr int kCandidates = 8;
  cublasLtMatmulHeuristicResult_t results[kCandidates]{};
  int found = 0;
  // Decode rows' algorithm: the heuristic's for kGemmRows rows; prefill rows': for
  // kPrefillPlanRows.
  const auto [hx, hy] = prefill ? layouts(p, kPrefillPlanRows) : std::make_pair(p.x, p.y);
  if (status == CUBLAS_STATUS_SUCCESS) {
    status = cublasLtMatmulAlgoGetHeuristic(handle_, p.desc, p.w, hx, hy, hy, pref, kCandidates,
                                            results, &found);
  }
  cublasLtMatmulPreferenceDestroy(pref);
  PACELINE_CUBLAS_CHECK(status);
  if (found < 1) fail("cuBLASLt has no algorithm for a bf16 GEMM of k {} n {}", k, n);
  // The best-ranked algorithm, as before: with split-K its pieces and their reduction are fixed
  // too, so it keeps its rows' bits for any row count; a whole call that would need more
  // workspace than we hold stays chunked.
  const int pick = 0;
  p.algo = results[pick].algo;
  return plans_.emplace(key, p).first->second;
}

void Gemm::run_swiglu(const bf16* x, int64_t rows, int64_t k, const bf16* w, int64_t width,
                      float* gate_up, bf16* act, int64_t small_rows) {
  const int64_t decode = std::clamp<int64_t>(small_rows, 0, rows);
  int64_t first = 0;  // the first row left to gate_up and the SwiGLU kernel
  if (decode > 0 && small_m_ && small_m_supported(k)) {
    for (int64_t r = 0; r < decode; r += kSmallMLaunchRows) {
      PACELINE_CUDA_CHECK(launch_gemm_small_m_swiglu(
          x + r * k, static_cast<int>(std::min(kSmallMLaunchRows, decode - r)), k, w, width,
          act + r * width, stream_));
    }
    first = decode;
  }
  if (first == rows) return;
  // As run_f32 would take rows [first, rows): decode rows by cuBLASLt's decode algorithm (small-M
  // off), prefill rows by theirs.
  run(x + first * k, rows - first, k, w, 2 * width, gate_up + first * 2 * width, CUDA_R_32F, 0.0f,
      decode - first);
  PACELINE_CUDA_CHECK(launch_swiglu(gate_up + first * 2 * width, width,
                                    static_cast<int>(rows - first), act + first * width, stream_,
                                    kSwigluTurn));
}

std::string Gemm::describe(int64_t k, int64_t n, bool accumulate, bool prefill) {
  const Plan& p = plan(k, n, CUDA_R_32F, accumulate, prefill);
  auto get = [&](cublasLtMatmulAlgoConfigAttributes_t a) {
    uint32_t v = 0;
    size_t written = 0;
    cublasLtMatmulAlgoConfigGetAttribute(&p.algo, a, &v, sizeof v, &written);
    return v;
  };
  return fmt::format(
      "k {} n {}: algo {} tile {} stages {} split-k {} reduction {} swizzle {}, {} rows per call",
      k, n, get(CUBLASLT_ALGO_CONFIG_ID), get(CUBLASLT_ALGO_CONFIG_TILE_ID),
      get(CUBLASLT_ALGO_CONFIG_STAGES_ID), get(CUBLASLT_ALGO_CONFIG_SPLITK_NUM),
      get(CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME), get(CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING),
      max_call_rows(const_cast<Plan&>(p)));
}

void Gemm::run(const bf16* x, int64_t rows, int64_t k, const bf16* w, int64_t n, void* y,
               cudaDataType_t y_type, float beta, int64_t small_rows) {
  const size_t y_size = y_type == CUDA_R_32F ? 4 : 2;
  const int64_t decode = std::clamp<int64_t>(small_rows, 0, rows);
  const bool small_m = small_m_ && small_m_supported(k);
  int64_t first = 0;  // the first row of the rows left to the last call below
  if (decode > 0 && small_m) {
    for (int64_t r = 0; r < decode; r += kSmallMLaunchRows) {
      PACELINE_CUDA_CHECK(launch_gemm_small_m(
          x + r * k, static_cast<int>(std::min(kSmallMLaunchRows, decode - r)), k, w, n,
          static_cast<char*>(y) + static_cast<size_t>(r * n) * y_size, y_type == CUDA_R_16BF, beta,
          stream_));
    }
    first = decode;
  } else if (decode > 0 && decode < rows && prefill_plan_) {
    // Decode rows by the decode algorithm, before the prefill rows' call: padded to kGemmRows
    // (faster) unless the padding rows are prefill rows whose outputs it would add to (beta != 0);
    // with beta 0 the prefill rows' call overwrites what the padding wrote.
    run_cublas(x, decode, k, w, n, y, y_type, beta, false, beta == 0.0f);
    first = decode;
  }
  // The rest: prefill rows by the prefill algorithm; or, without a prefill algorithm, every row
  // not taken above by the decode one. The rows left are all prefill rows exactly when the decode
  // rows (none, or some taken above) end where they begin.
  if (first < rows) {
    const bool prefill = prefill_plan_ && first == decode;
    run_cublas(x + first * k, rows - first, k, w, n,
               static_cast<char*>(y) + static_cast<size_t>(first * n) * y_size, y_type, beta,
               prefill, true);
  }
}

void Gemm::run_cublas(const bf16* x, int64_t rows, int64_t k, const bf16* w, int64_t n, void* y,
                      cudaDataType_t y_type, float beta, bool prefill, bool pad) {
  const float alpha = 1.0f;
  const size_t y_size = y_type == CUDA_R_32F ? 4 : 2;
  Plan& p = const_cast<Plan&>(plan(k, n, y_type, beta != 0.0f, prefill));
  const int64_t padded = pad ? gemm_padded_rows(rows) : rows;
  // Calls of as many rows as the algorithm takes with our workspace (split-K needs workspace in
  // proportion to the rows), chunks of kGemmRows when asked to.
  const int64_t most = single_call_ ? max_call_rows(p) : kGemmRows;
  for (int64_t first = 0; first < padded; first += most) {
    const int64_t piece = std::min(most, padded - first);
    const auto [lx, ly] = piece == kGemmRows ? std::make_pair(p.x, p.y) : layouts(p, piece);
    void* out = static_cast<char*>(y) + static_cast<size_t>(first * n) * y_size;
    PACELINE_CUBLAS_CHECK(cublasLtMatmul(handle_, p.desc, &alpha, w, p.w, x + first * k, lx,
                                         &beta, out, ly, out, ly, &p.algo,
                                         workspace_.as<void>(), workspace_.bytes(), stream_));
  }
}

std::pair<cublasLtMatrixLayout_t, cublasLtMatrixLayout_t> Gemm::layouts(Plan& p, int64_t rows) {
  auto it = p.whole.find(rows);
  if (it != p.whole.end()) return it->second;
  cublasLtMatrixLayout_t lx = nullptr, ly = nullptr;
  PACELINE_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&lx, CUDA_R_16BF, static_cast<uint64_t>(p.k),
                                                   static_cast<uint64_t>(rows), p.k));
  PACELINE_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&ly, p.y_type, static_cast<uint64_t>(p.n),
                                                   static_cast<uint64_t>(rows), p.n));
  return p.whole.emplace(rows, std::make_pair(lx, ly)).first->second;
}

int64_t Gemm::max_call_rows(Plan& p) {
  if (p.max_rows > 0) return p.max_rows;
  // The largest power-of-two multiple of kGemmRows up to 64k rows that the algorithm accepts.
  for (int64_t rows = int64_t{1} << 16; rows > kGemmRows; rows /= 2) {
    const auto [lx, ly] = layouts(p, rows);
    cublasLtMatmulHeuristicResult_t check{};
    if (cublasLtMatmulAlgoCheck(handle_, p.desc, p.w, lx, ly, ly, &p.algo, &check) ==
            CUBLAS_STATUS_SUCCESS &&
        check.workspaceSize <= workspace_.bytes()) {
      return p.max_rows = rows;
    }
  }
  return p.max_rows = kGemmRows;
}

}  // namespace paceline::cuda
