#pragma once
// The projections: y[rows, n] = x[rows, k] @ w[n, k]^T, bf16 inputs, float32 accumulation, and a
// float32 or bf16 output, through cuBLASLt. beta = 1 accumulates into y, which is how the
// residual additions after o_proj and down_proj are fused into those GEMMs.
//
// Batch invariance: a GEMM library picks its kernel (tiles, split-K) from the whole shape, so a
// row's bits would depend on how many rows share the call. Every call therefore runs in chunks
// of exactly kGemmRows rows (x and y hold a multiple of kGemmRows rows; the padding rows compute
// values nobody reads), and the cuBLASLt algorithm of each (k, n, output type, beta) is chosen
// once, on first use, and kept: one shape, one kernel, the same bits for a row in any batch.
// At 128 rows a chunk is still memory-bound in decode and near the compute ridge in prefill.
//
// A long prefill does not need the chunks: with its algorithm fixed, a kernel computes each
// output element the same way whatever the row count (its tiles, its walk over k and any split-K
// pieces are fixed; more rows only mean more tiles), so one call over all the rows gives the
// chunked calls' bits while the weights are read once per call instead of once per 128 rows.
// tests/cuda/cuda_gemm_test.cpp checks the bits on the model's shapes; PACELINE_GEMM_CHUNKED=1
// brings the chunked calls back.
//
// Two paths, chosen per row by its own sequence: a call's first small_rows rows (the step's rows
// of sequences with one new token, laid out first by step_inputs) are decode rows, the others
// prefill rows (prefill chunks, speculative verify). Decode rows go through the small-M kernel of
// gemm_small_m.h in launches of at most kSmallMRows rows, whatever the batch, or through
// cuBLASLt with the algorithm chosen at kGemmRows rows; the executor chooses once
// (gemm_small_m_for): the small-M kernel when no step can decode more than kSmallMAutoRows
// sequences (--max-num-seqs 64 or less), cuBLASLt above (where the small-M kernel loses).
// Prefill rows go through cuBLASLt with an algorithm chosen at kPrefillPlanRows rows: the one
// chosen at 128 rows (split-K, narrow tiles) is slow at thousands of rows. Each path gives a row
// the same bits for any row count, and which path a row takes depends only on its own
// sequence's tokens in the step, so a row has the same bits in a pure step, a mixed step,
// eagerly and in a graph. PACELINE_GEMM_PREFILL_PLAN=0 sends prefill rows through the decode
// rows' cuBLASLt algorithm as before.
#include <cublasLt.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <tuple>

#include "exec/cuda/device_buffer.h"
#include "exec/cuda/kernels.h"

namespace paceline::cuda {

inline constexpr int64_t kGemmRows = 128;
inline int64_t gemm_padded_rows(int64_t rows) { return (rows + kGemmRows - 1) / kGemmRows * kGemmRows; }
// Rows a GEMM operand must hold for a call of `rows` rows: the cuBLASLt part starts after the
// small-M rows and is padded to kGemmRows from there.
inline int64_t gemm_buffer_rows(int64_t rows) {
  return gemm_padded_rows(rows) + kGemmRows;
}

// The most decode rows for which the executor takes the small-M kernel. H200, Qwen3-8B decode
// steps at context 1,024 (docs/performance.md, "Session 17"): 13% faster than cuBLASLt's padded
// call at batch 1, 8% at 16, 2% slower at 64, 28% slower at 128 and 34% at 256. Steps below the
// cap are the common case of a server capped at 64 sequences, so 64 rather than 32.
inline constexpr int64_t kSmallMAutoRows = 64;
// The row count at which the prefill rows' cuBLASLt algorithm is chosen (cuBLASLt's heuristic's
// first for that shape).
inline constexpr int64_t kPrefillPlanRows = 8192;
// Whether the decode rows of an executor whose steps decode at most max_decode_rows sequences
// take the small-M kernel: PACELINE_GEMM_SMALL_M=1 or 0 decides; unset, yes when
// max_decode_rows <= kSmallMAutoRows. One choice for the executor's life, so a row gets the same
// bits in every step (batch invariance).
bool gemm_small_m_for(int64_t max_decode_rows);

class Gemm {
 public:
  explicit Gemm(cudaStream_t stream);
  ~Gemm();
  Gemm(const Gemm&) = delete;
  Gemm& operator=(const Gemm&) = delete;

  // The first small_rows of the rows are decode rows (the small-M kernel when enabled and
  // k % 8 == 0, else cuBLASLt's decode algorithm), the others prefill rows.
  void run_f32(const bf16* x, int64_t rows, int64_t k, const bf16* w, int64_t n, float* y,
               float beta = 0.0f, int64_t small_rows = 0);
  void run_bf16(const bf16* x, int64_t rows, int64_t k, const bf16* w, int64_t n, bf16* y,
                int64_t small_rows = 0);
  // gate_up and SwiGLU: w is gate_up_proj with gate and up rows in turns of kSwigluTurn
  // (gate_up_layout.h), act[r] = silu(gate) * up (bf16, width columns). The decode rows that take
  // the small-M kernel get act from it directly (launch_gemm_small_m_swiglu); the others go
  // through gate_up (float32, 2 width columns in the same turns, rows as run_f32 lays them out)
  // and the SwiGLU kernel. The same bits as run_f32 on gate_up followed by launch_swiglu.
  void run_swiglu(const bf16* x, int64_t rows, int64_t k, const bf16* w, int64_t width,
                  float* gate_up, bf16* act, int64_t small_rows = 0);
  void set_small_m(bool on) { small_m_ = on; }
  bool small_m() const { return small_m_; }

  // Whether prefill rows take their own algorithm (the default) or the decode rows' one.
  void set_prefill_plan(bool on) { prefill_plan_ = on; }
  bool prefill_plan() const { return prefill_plan_; }

  // One call over all the rows (the default) or one call per kGemmRows rows.
  void set_single_call(bool on) { single_call_ = on; }
  // The algorithm used for (k, n) with a float32 output (decode rows' or prefill rows'): tile,
  // stages, split-K, as a line of text.
  std::string describe(int64_t k, int64_t n, bool accumulate, bool prefill = false);

 private:
  // The descriptors and the algorithm of one chunk shape.
  struct Plan {
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t w = nullptr, x = nullptr, y = nullptr;
    cublasLtMatmulAlgo_t algo{};
    int64_t k = 0, n = 0;
    cudaDataType_t y_type = CUDA_R_32F;
    // Layouts of x and y for calls of that many rows (a multiple of kGemmRows), made on first use.
    std::map<int64_t, std::pair<cublasLtMatrixLayout_t, cublasLtMatrixLayout_t>> whole;
    int64_t max_rows = 0;  // the most rows one call takes; 0: not yet known
  };
  // k, n, output type, beta != 0, prefill rows' algorithm
  using Key = std::tuple<int64_t, int64_t, int, bool, bool>;
  const Plan& plan(int64_t k, int64_t n, cudaDataType_t y_type, bool accumulate, bool prefill);
  std::pair<cublasLtMatrixLayout_t, cublasLtMatrixLayout_t> layouts(Plan& p, int64_t rows);
  int64_t max_call_rows(Plan& p);
  void run(const bf16* x, int64_t rows, int64_t k, const bf16* w, int64_t n, void* y,
           cudaDataType_t y_type, float beta, int64_t small_rows);
  // rows rows from x through one algorithm; pad: round the rows up to kGemmRows (the operands
  // hold them; the padding rows' outputs are scratch).
  void run_cublas(const bf16* x, int64_t rows, int64_t k, const bf16* w, int64_t n, void* y,
                  cudaDataType_t y_type, float beta, bool prefill, bool pad);

  cublasLtHandle_t handle_ = nullptr;
  cudaStream_t stream_ = nullptr;
  DeviceBuffer workspace_;  // given explicitly so that graph capture allocates nothing
  std::map<Key, Plan> plans_;
  bool single_call_ = true;
  bool small_m_ = false;
  bool prefill_plan_ = true;
};

}  // namespace paceline::cuda
